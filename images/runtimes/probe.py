# What Python believes it has, printed as one JSON line for Limit Lab's
# runtime-cpus lab (internal/workload/runtimes.go reads and checks it).
import json
import os
import platform

figures = [
    {"name": "cpu_count", "value": os.cpu_count() or -1},
    {"name": "sched_getaffinity", "value": len(os.sched_getaffinity(0))},
]
# os.process_cpu_count is new in Python 3.13.
if hasattr(os, "process_cpu_count"):
    figures.append({"name": "process_cpu_count", "value": os.process_cpu_count() or -1})
print(json.dumps({"runtime": "python", "version": platform.python_version(), "figures": figures}))
