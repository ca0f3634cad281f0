from scenario_kit import bash, read, write, step

CONF = '''"""Retry settings for the fetcher."""
RETRIES = 3
BACKOFF_S = 0.5
TIMEOUT_S = 10
'''
FETCH = '''import time
from conf import RETRIES, BACKOFF_S


def fetch(get, url):
    for attempt in range(RETRIES):
        try:
            return get(url)
        except OSError:
            time.sleep(BACKOFF_S * attempt)
    raise RuntimeError(f"gave up on {url}")
'''
THOUGHT = " ".join(
    f"Consideration {i}: the retry loop sleeps BACKOFF_S times the attempt number, so attempt {i % 3} "
    f"waits {0.5 * (i % 3):.1f} seconds; a jittered exponential backoff would spread the load of "
    f"{i * 7} concurrent fetchers, but the timeout of 10 seconds bounds each try, and the caller "
    f"expects RuntimeError after {i % 5 + 1} failures." for i in range(60))

SCENARIO = {
    "name": "R1",
    "title": "Fetcher retry backoff",
    "project": "fetcher",
    "files": {"conf.py": CONF, "fetch.py": FETCH},
    "limit": {"context": 64000, "output": 8000},
    "turns": [
        {"user": "Review the retry backoff in fetch.py and make it exponential.",
         "responses": [
             step(tools=[read("fetch.py")]),
             step(reasoning=THOUGHT, tools=[read("conf.py")]),
             step(tools=[bash("grep -n BACKOFF fetch.py conf.py", description="Finds the backoff uses")]),
             step(tools=[bash("python3 -c 'import fetch'", description="Imports the module")]),
             step(text="The backoff is linear (`BACKOFF_S * attempt`, 0 s before the first retry); I suggest `BACKOFF_S * 2 ** attempt`."),
         ]},
        {"user": "Show me conf.py once more.",
         "responses": [
             step(tools=[bash("cat conf.py", description="Shows the settings")]),
             step(text="`RETRIES = 3`, `BACKOFF_S = 0.5`, `TIMEOUT_S = 10`."),
         ]},
    ],
}
