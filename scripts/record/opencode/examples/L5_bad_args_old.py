"""L5: 0.1.174: a `write` call with a wrong argument name and an 8 KB content (AI_InvalidToolArgumentsError quotes the
whole value in the stored error), then two more turns."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from long_old_common import bash, read, write, step, tool

DOC = "".join(f"- Item {i}: the reorder point of SKU-{i:05d} is demand x lead time + safety stock ({i % 17} units).\n" for i in range(90))
SCENARIO = {
    "name": "L5",
    "title": "Inventory notes",
    "project": "badargs",
    "files": {"README.md": "# badargs\n"},
    "limit": {"context": 64000, "output": 8000},
    "turns": [
        {"user": "Write the inventory notes to NOTES.md.",
         "responses": [step(text="Writing the notes.", tools=[tool("write", path="NOTES.md", content=DOC)])]},
        {"user": "The write failed: use the filePath argument and try again.",
         "responses": [step(tools=[write("NOTES.md", DOC)]), step(tools=[bash("wc -l NOTES.md", "Counts lines")]),
                       step(text="NOTES.md written (90 lines).")]},
        {"user": "Thanks. Anything else to check?",
         "responses": [step(tools=[bash("head -3 NOTES.md", "Shows the head")]), step(text="No, all good.")]},
    ],
}
