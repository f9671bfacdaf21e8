// What Node.js believes it has, printed as one JSON line for Limit Lab's
// runtime-cpus lab (internal/workload/runtimes.go reads and checks it).
'use strict';
const os = require('os');
const v8 = require('v8');
const figures = [
  {name: 'available_parallelism', value: os.availableParallelism ? os.availableParallelism() : -1},
  {name: 'cpus_length', value: os.cpus().length},
  {name: 'heap_limit_bytes', value: v8.getHeapStatistics().heap_size_limit},
];
console.log(JSON.stringify({runtime: 'node', version: process.versions.node, figures}));
