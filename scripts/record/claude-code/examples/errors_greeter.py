"""errors_greeter - what goes wrong, recorded: a tool error, an API error, an interrupt (example scenario).

Project `greeter` (files below). Turn 1: the model reads the script, tries an Edit whose
old_string is not in the file (a real tool error, `is_error`), then the right Edit, runs the
script; then the model endpoint answers HTTP 400 (not retried), which Claude Code records as a
synthetic API-error assistant message. Turn 2: a long Bash command is interrupted with SIGINT
while it runs. Turn 3: an ordinary question and answer after the interrupt.
"""

from scenario_kit import bash, edit, http_error, read, step

HELLO = "#!/bin/sh\n# Greets the user.\necho \"helo, $1\"\n"

SCENARIO = {
    "name": "errors_greeter",
    "project": "greeter",
    "files": {"hello.sh": HELLO},
    "turns": [
        {"user": "hello.sh misspells the greeting. Fix it and run it with the name Ada.",
         "responses": [
             step(tools=[read("hello.sh")]),
             step(text="The typo is on line 3.", tools=[edit("hello.sh", "echo \"hello, $1\"", "echo \"hello, $1\"")]),
             step(text="Wrong old string; the file says `helo`.",
                  tools=[edit("hello.sh", "echo \"helo, $1\"", "echo \"hello, $1\"")]),
             step(tools=[bash("sh hello.sh Ada", "Run the greeting")]),
             http_error(400, "messages: the request was rejected by the test server", "invalid_request_error"),
         ]},
        {"user": "Now time how long a slow greeting loop takes: run it 30 times with a one second pause.",
         "interrupt": {"after_step": 0, "delay_s": 3},
         "responses": [
             step(tools=[bash("for i in $(seq 30); do sh hello.sh Ada; sleep 1; done", "Slow greeting loop", 120000)]),
             step(text="The loop finished."),
         ]},
        {"user": "Never mind the loop. What does hello.sh print for Grace?",
         "responses": [
             step(text="`sh hello.sh Grace` prints `hello, Grace`."),
         ]},
    ],
}
