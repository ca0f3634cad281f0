"""L4: 0.1.174, 20000/4000 window; summary 1 after a big read (few messages, the calibration), then a
26-step answer with 4 small parallel tool calls per step (~130 messages), so summary 2 covers many short messages."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from long_old_common import bash, read, glob, grep, step

BIG = "".join(f"Line {i}: the quick brown fox jumps over the lazy dog number {i} while the loader reads option opt_{i % 40}.\n" for i in range(260))
FILES = {f"src/mod_{i:02d}.py": f"VALUE_{i} = {i}\n" for i in range(12)}
FILES.update({"notes/big.txt": BIG, "README.md": "# many\n\nTiny modules.\n"})
steps = []
for k in range(26):
    steps.append(step(tools=[bash(f"test -f src/mod_{k % 12:02d}.py && echo yes", f"Checks module {k}"),
                             glob(f"src/mod_{k % 12:02d}.*"),
                             grep(f"VALUE_{k % 12} ", path="src"),
                             bash(f"true # probe {k}", f"Probe {k}")]))
steps.append(step(text="All 12 modules exist and define their VALUE constant once."))

SCENARIO = {
    "name": "L4",
    "title": "Many small checks",
    "project": "many",
    "files": FILES,
    "limit": {"context": 20000, "output": 4000},
    "summaries": ["## Summary\n\nProject `many`: 12 tiny modules `src/mod_NN.py` each defining `VALUE_N`; `notes/big.txt` read. "
                  f"Next: verify every module. (summary {k})" for k in range(1, 6)],
    "turns": [
        {"user": "Read notes/big.txt and tell me what it is about.",
         "responses": [step(tools=[read("notes/big.txt")]), step(text="260 numbered lines about a fox and loader options.")]},
        {"user": "Check every module in src/ thoroughly, one by one, with several probes each.",
         "responses": steps},
        {"user": "Good. Which module has the largest VALUE?",
         "responses": [step(tools=[grep("VALUE_11", path="src")]), step(text="`src/mod_11.py` (`VALUE_11 = 11`).")]},
        {"user": "Thanks, that's all.",
         "responses": [step(text="You're welcome.")]},
    ],
}
