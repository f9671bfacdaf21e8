-- Every run the server has seen or imported, and its live stream as it was
-- published: run views and sample batches, in order.
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	participant TEXT NOT NULL DEFAULT '',
	lab         TEXT NOT NULL DEFAULT '',
	name        TEXT NOT NULL,
	state       TEXT NOT NULL,
	created_at  TEXT NOT NULL, -- RFC 3339, UTC, so that text order is time order
	summary     TEXT NOT NULL DEFAULT '',
	imported    INTEGER NOT NULL DEFAULT 0,
	featured_at TEXT,
	view        BLOB NOT NULL -- the run as the API shows it, JSON
);
CREATE INDEX runs_by_time ON runs (created_at DESC);
CREATE INDEX runs_by_lab ON runs (lab, created_at DESC);
CREATE INDEX runs_by_feature ON runs (featured_at) WHERE featured_at IS NOT NULL;

CREATE TABLE messages (
	seq    INTEGER PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	body   BLOB NOT NULL
);
CREATE INDEX messages_by_run ON messages (run_id, seq);
