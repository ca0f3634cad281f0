from scenario_kit import bash, read, write, step

SETTINGS = '''"""Settings for the ledger service, read once at start-up."""
import os

DATABASE_URL = os.environ.get("LEDGER_DB", "sqlite:///ledger.db")
CURRENCY = "EUR"
ROUNDING = 2
'''
APP = '''from settings import DATABASE_URL, CURRENCY


def describe():
    return f"ledger on {DATABASE_URL} in {CURRENCY}"


if __name__ == "__main__":
    print(describe())
'''
MAKE = ("mkdir -p migrations/versions && for i in $(seq -w 1 90); do "
        "printf '\"\"\"Schema step %s.\"\"\"\\nUP = \"ALTER TABLE entries ADD COLUMN c%s TEXT\"\\n' $i $i "
        "> migrations/versions/${i}_add_entry_column_c${i}.py; done && ls migrations/versions | wc -l")
AGENTS = ("# Ledger\n\n- Schema changes go in `migrations/versions/NN_<what>.py`, one ALTER per file, numbered.\n"
          "- Never edit an applied migration; add a new one.\n- Run `python3 migrations/check.py` after adding one.\n"
          "- Settings live in `settings.py`; read them from the environment, never hard-code secrets.\n") * 3
CHECK = '''import os, re
names = sorted(os.listdir(os.path.join(os.path.dirname(__file__), "versions")))
nums = [int(re.match(r"(\\d+)_", n).group(1)) for n in names]
assert nums == list(range(1, len(nums) + 1)), nums
print(f"{len(nums)} migrations, numbered 1..{len(nums)}")
'''

SCENARIO = {
    "name": "M1",
    "title": "Ledger schema migrations",
    "project": "ledger",
    "files": {"settings.py": SETTINGS, "app.py": APP, "README.md": "# ledger\n\nA tiny ledger service.\n"},
    "limit": {"context": 64000, "output": 8000},
    "turns": [
        {"user": "Where does the ledger read its database settings from?",
         "responses": [
             step(tools=[read("settings.py")]),
             step(tools=[bash("python3 app.py", description="Runs the app")]),
             step(text="From `settings.py`: `DATABASE_URL` comes from `LEDGER_DB` (default `sqlite:///ledger.db`)."),
         ]},
        {"user": "Migrate the schema history into numbered migration files, one column per file (90 of them), and write an AGENTS.md with the rules.",
         "responses": [
             step(tools=[bash(MAKE, description="Creates 90 migration files")]),
             step(tools=[write("AGENTS.md", AGENTS)]),
             step(tools=[write("migrations/check.py", CHECK)]),
             step(text="Created 90 migrations in `migrations/versions/`, a checker and AGENTS.md."),
         ]},
        {"user": "Run the migration check and show me the last three migrations.",
         "responses": [
             step(tools=[bash("python3 migrations/check.py", description="Checks migration numbering")]),
             step(tools=[bash("ls migrations/versions | tail -3", description="Lists the last migrations")]),
             step(text="All 90 migrations are numbered 1..90; the last three add columns c88-c90."),
         ]},
        {"user": "Good. Show the app description once more.",
         "responses": [
             step(tools=[bash("python3 app.py", description="Runs the app")]),
             step(text="`ledger on sqlite:///ledger.db in EUR`."),
         ]},
    ],
}
