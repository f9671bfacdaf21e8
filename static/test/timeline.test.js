import { test } from "node:test";
import assert from "node:assert/strict";
import { timeline, startAt } from "../timeline.js";

test("timeline gives each message the time of the tick it came with", () => {
  const stream = [
    { type: "run", run: { state: "running" } },
    { type: "samples", samples: [{ lane: 0, t: 0.25 }, { lane: 1, t: 0.26 }] },
    { type: "host", host: { t: 0.3 } },
    { type: "run", run: { state: "succeeded" } },
  ];
  const { messages, end } = timeline(stream);
  assert.deepEqual(messages.map((m) => m.at), [0, 0.26, 0.3, 0.3]);
  assert.equal(end, 0.3);
});

test("a time never goes back, and an empty tick keeps the last", () => {
  const { messages } = timeline([{ type: "samples", samples: [{ t: 2 }] }, { type: "samples", samples: [] }, { type: "host", host: { t: 1 } }]);
  assert.deepEqual(messages.map((m) => m.at), [2, 2, 2]);
});

test("startAt reads #t= and #phase=, and starts at the end otherwise", () => {
  const bounds = [10, 20];
  assert.equal(startAt("#t=12s", bounds, 30), 12);
  assert.equal(startAt("#t=12", bounds, 30), 12);
  assert.equal(startAt("#t=99s", bounds, 30), 30);
  assert.equal(startAt("#t=-3", bounds, 30), 0);
  assert.equal(startAt("#phase=1", bounds, 30), 0);
  assert.equal(startAt("#phase=2", bounds, 30), 10);
  assert.equal(startAt("#phase=3", bounds, 30), 20);
  assert.equal(startAt("#phase=4", bounds, 30), 30);
  assert.equal(startAt("", bounds, 30), 30);
  assert.equal(startAt("#t=abc", bounds, 30), 30);
});
