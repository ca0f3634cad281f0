"""L3: 0.1.174, 16 turns, 20000/4000 window: texts before tool calls (long ones), frequent summaries,
a cut stream, an output-length stop, an unknown tool, invalid tool args, a 12-step turn, and at the end
an overflow followed by a summary call that itself exceeds the window."""
import sys
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from long_old_common import bash, read, write, edit, glob, grep, step, todo, todoread, ls, webfetch, tool

def para(topic, n):
    return "\n\n".join(
        f"### {topic} {i}\n\nThe {topic.lower()} section {i} explains how the loader resolves option `opt_{i}`: it first reads "
        f"`settings.toml`, then the environment variable `APP_OPT_{i}`, and finally the command line flag `--opt-{i}`. "
        f"Values are validated against the schema (type {['int', 'str', 'bool', 'float'][i % 4]}, default {i * 3}); "
        f"an invalid value raises `ConfigError` with the offending key and source." for i in range(n))

GUIDE = "# Guide\n\n" + para("Guide", 40)
API = "# API\n\n" + para("Endpoint", 30)
LOADER = '''"""Configuration loader: file, then environment, then flags."""
import os
import tomllib

SCHEMA = {f"opt_{i}": [int, str, bool, float][i % 4] for i in range(40)}


class ConfigError(ValueError):
    pass


def load(path, env=os.environ, flags=None):
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    for key, typ in SCHEMA.items():
        env_key = "APP_" + key.upper()
        if env_key in env:
            cfg[key] = env[env_key]
        if flags and key in flags:
            cfg[key] = flags[key]
        if key in cfg and not isinstance(cfg[key], typ):
            try:
                cfg[key] = typ(cfg[key])
            except ValueError:
                raise ConfigError(f"{key}: {cfg[key]!r} is not {typ.__name__}")
    return cfg
'''
TOML = "".join(f"opt_{i} = {[str(i), repr('v%d' % i).replace(chr(39), chr(34)), 'true', str(i + 0.5)][i % 4]}\n" for i in range(40))
RAW = '''import json
print(json.dumps([[f"2026-11-{d:02d}", h, (d * 37 + h * 11) % 997, (d * h) % 13] for d in range(1, 29) for h in range(48)], separators=(",", ":")))
'''
LONG_PLAN = " ".join(
    f"Point {i}: the loader applies the file first and the environment second, so `APP_OPT_{i}` overrides "
    f"`opt_{i}` from settings.toml; flags come last. The bool coercion `bool('false')` is True, which is a bug for opt_{i}."
    for i in range(22))
SUMMARY = ("## Summary\n\nProject `cfgtool`: a config loader (`loader.py`: file -> env -> flags, schema of 40 options) with "
           "docs in `docs/`. Known bug: `bool('false')` is True, so boolean env overrides are wrong. Work in progress: "
           "fix the bool coercion, add tests, keep docs in sync.")

SCENARIO = {
    "name": "L3",
    "title": "Config loader review",
    "project": "cfgtool",
    "files": {"loader.py": LOADER, "settings.toml": TOML, "docs/guide.md": GUIDE, "docs/api.md": API,
              "tools/raw.py": RAW, "README.md": "# cfgtool\n\nConfig loading for the app.\n", "tests/__init__.py": ""},
    "limit": {"context": 20000, "output": 4000},
    "summaries": [SUMMARY + f"\n\n(summary {k})" for k in range(1, 12)],
    "turns": [
        {"user": "Survey the docs folder and tell me what the guide covers.",
         "responses": [
             step(text="I'll start by listing the project so I know where the docs live, then read the guide and the API reference. " * 6,
                  tools=[ls()]),
             step(text="Now the guide.", tools=[read("docs/guide.md")]),
             step(text="And the API reference, to compare the two.", tools=[read("docs/api.md", limit=40)]),
             step(text="The guide documents 40 options, each resolved file -> env -> flag with schema validation."),
         ]},
        {"user": "Explain how loader.py resolves an option.",
         "responses": [
             step(text="Let me read the loader.", tools=[read("loader.py")]),
             step(text=LONG_PLAN, tools=[grep("APP_", include="*.py")]),
             step(text="Two quick checks in parallel.", tools=[bash("python3 -c 'print(bool(\"false\"))'", "Checks bool coercion"),
                                                             bash("wc -l settings.toml", "Counts settings lines")]),
             step(text="File first, then `APP_OPT_N`, then flags; values are coerced with the schema type, and `bool('false')` is `True` (a bug)."),
         ]},
        {"user": "Run a smoke test of the loader against settings.toml.",
         "responses": [
             step(text="Running a smoke test first.", tools=[bash("python3 -c 'import loader; print(len(loader.load(\"settings.toml\")))'", "Loads the settings")]),
             step(text="The loader returned 40 options; now I will check the boolean options one by one and", stream_cut=True),
         ]},
        {"user": "Your answer was cut off. Continue the check of the boolean options.",
         "responses": [
             step(text="Checking the boolean options with an environment override.",
                  tools=[bash("APP_OPT_2=false python3 -c 'import loader; print(loader.load(\"settings.toml\")[\"opt_2\"])'", "Overrides opt_2")]),
             step(text="Reading the guide's section on booleans to compare.", tools=[read("docs/guide.md", offset=0, limit=60)]),
             step(text="Confirmed: `APP_OPT_2=false` yields `True`. The guide says it should be `False`."),
         ]},
        {"user": "Write a detailed design note for the bool fix, as long as it needs to be.",
         "responses": [
             step(text="Let me look at the schema once more.", tools=[read("loader.py", offset=0, limit=10)]),
             step(text=("Design note. " + LONG_PLAN) * 2, finish="length"),
         ]},
        {"user": "That got cut at the output limit. Just apply the fix with a patch.",
         "responses": [
             step(text="Applying a patch.", tools=[tool("apply_patch", patch="*** Begin Patch\n*** Update File: loader.py\n@@\n-            try:\n+            if typ is bool:\n*** End Patch")]),
         ]},
        {"user": "The patch tool does not exist here. Read the loader again with the read tool.",
         "responses": [
             step(text="Reading it.", tools=[tool("read", path="loader.py")]),
         ]},
        {"user": "Use the filePath argument. Then fix the bool coercion with edit, add tests and run them.",
         "responses": [
             step(text="Planning the work.", tools=[todo(("Read loader.py", "in_progress", "high"), ("Fix bool coercion", "pending", "high"),
                                                        ("Add tests", "pending", "medium"), ("Run tests", "pending", "medium"))]),
             step(text="Reading the loader with the right argument.", tools=[read("loader.py")]),
             step(text="Fixing the coercion: strings 'false', '0', 'no' map to False.",
                  tools=[edit("loader.py", "            try:\n                cfg[key] = typ(cfg[key])",
                              "            try:\n                if typ is bool and isinstance(cfg[key], str):\n                    cfg[key] = cfg[key].lower() not in (\"false\", \"0\", \"no\", \"\")\n                else:\n                    cfg[key] = typ(cfg[key])")]),
             step(text="Checking the fix.", tools=[bash("APP_OPT_2=false python3 -c 'import loader; print(loader.load(\"settings.toml\")[\"opt_2\"])'", "Checks the fix")]),
             step(text="Updating the plan.", tools=[todo(("Read loader.py", "completed", "high"), ("Fix bool coercion", "completed", "high"),
                                                        ("Add tests", "in_progress", "medium"), ("Run tests", "pending", "medium"))]),
             step(text="Writing the tests.", tools=[write("tests/test_loader.py",
                  "import os, unittest\nimport loader\n\n\nclass BoolTest(unittest.TestCase):\n    def test_false(self):\n"
                  "        self.assertIs(loader.load('settings.toml', env={'APP_OPT_2': 'false'})['opt_2'], False)\n\n"
                  "    def test_true(self):\n        self.assertIs(loader.load('settings.toml', env={'APP_OPT_2': 'yes'})['opt_2'], True)\n")]),
             step(text="Running them.", tools=[bash("python3 -m unittest discover -s tests -t . -v 2>&1 | tail -6", "Runs the tests")]),
             step(text="Cross-checking the docs for the bool wording.", tools=[grep("bool", path="docs")]),
             step(text="Reading the API doc's first part.", tools=[read("docs/api.md", limit=30)]),
             step(text="Marking everything done.", tools=[todo(("Read loader.py", "completed", "high"), ("Fix bool coercion", "completed", "high"),
                                                             ("Add tests", "completed", "medium"), ("Run tests", "completed", "medium"))]),
             step(text="Final diff stat.", tools=[bash("git diff --stat", "Shows the diff stat")]),
             step(text="Fixed and tested: boolean strings `false`/`0`/`no`/empty now coerce to `False`; 2 tests pass."),
         ]},
        {"user": "Fetch the TOML spec from https://toml.io/en/v1.0.0 to double-check boolean syntax.",
         "responses": [
             step(text="Fetching the spec.", tools=[webfetch("https://toml.io/en/v1.0.0")]),
             step(text="The fetch failed (no network). TOML booleans are lowercase `true`/`false`, which settings.toml uses."),
         ]},
        {"user": "Read the whole guide again and list every option whose default is a multiple of 9.",
         "responses": [
             step(text="Reading the guide.", tools=[read("docs/guide.md")]),
             step(text="Options with a default divisible by 9: opt_0, opt_3, opt_6, ... opt_39 (every third option)."),
         ]},
        {"user": "Now the API reference: which endpoints mention float values?",
         "responses": [
             step(text="Searching.", tools=[grep("float", path="docs")]),
             step(text="Reading the API reference in full.", tools=[read("docs/api.md")]),
             step(text="Endpoints 3, 7, 11, ... 27 (every fourth) use float values."),
         ]},
        {"user": "Show git status and the full diff.",
         "responses": [
             step(text="Status and diff.", tools=[bash("git status --short", "Shows status"), bash("git diff", "Shows the diff")]),
             step(text="`loader.py` changed (bool coercion) and `tests/test_loader.py` is new."),
         ]},
        {"user": "Read loader.py, settings.toml and the guide once more, then dump tools/raw.py output.",
         "responses": [
             step(text="Reading the three files.", tools=[read("loader.py"), read("settings.toml"), read("docs/guide.md")]),
             step(text="Now the raw dump.", tools=[bash("python3 tools/raw.py", "Dumps raw data")]),
             step(text="Dumped."),
         ]},
        {"user": "That was too big. Just count the rows of the raw dump.",
         "responses": [
             step(text="Counting.", tools=[bash("python3 tools/raw.py | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'", "Counts rows")]),
             step(text="1344 rows."),
         ]},
        {"user": "Fine. What is the current default of opt_4?",
         "responses": [
             step(text="Checking.", tools=[bash("grep '^opt_4 ' settings.toml", "Finds opt_4")]),
             step(text="`opt_4 = 4`."),
         ]},
        {"user": "Thanks. A one-line status, please.",
         "responses": [
             step(text="Bool coercion fixed and tested; docs checked; nothing else open."),
         ]},
    ],
}
