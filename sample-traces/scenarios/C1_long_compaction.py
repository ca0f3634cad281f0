"""C1 - long investigation in a small context window, with compactions and API errors (tierscope sample trace).

Project `billing`: turns the monthly metered-usage export into invoice totals;
`reconcile` compares our gross totals with accounting's ledger. For November,
30 of 48 invoices differ by 1-2 cents. Cause: commit 4303bde (2026-11-03) moved
invoice totals from Decimal with per-line half-up rounding to floats rounded
once at the end.

Model limit context 14000 / output 3000: OpenCode compacts once a step's
prompt + completion reaches 11000 tokens. Provocations:
- turn 4: the provider answers HTTP 400 (not retried by OpenCode): the turn ends
  with an APIError on the assistant message; turn 5 asks again;
- turn 6: the provider answers HTTP 400 `context_length_exceeded`: OpenCode
  compacts with overflow=true and replays the user message;
- automatic compactions when the threshold is crossed (see SCENARIO["summaries"]).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from c1_files import FILES, HISTORY, write_data  # noqa: E402
from scenario_kit import bash, edit, http_error, read, step, write  # noqa: E402

USAGE = "data/usage-2026-11.csv"
LEDGER = "data/ledger-2026-11.csv"

T1 = ("Accounting says a lot of our November invoices don't match their ledger, off by a cent or two. Find out "
      "which ones and why. Don't change any code yet.")
T2 = "Show me one of the bigger ones line by line, and what accounting's rule gives for each line."
T3 = "When did this start? October reconciled fine."
T4 = "Write a failing test for it first, with C1183's numbers."
T5 = "That request failed on the provider side. Try again: the failing test first, with C1183's numbers."
T6 = "Now fix it: Decimal again, each line rounded half up like accounting does. Keep the rest as it is."
T7 = "Write NOTES.md: cause, which invoices are affected, the fix, and what to re-issue. Don't commit."

C1183_CHECK = '''python - <<'EOF'
from decimal import Decimal, ROUND_HALF_UP
cent = Decimal("0.01")
lines = [("api-calls", 56248, "0.0135"), ("storage-gb", 1763, "0.0450"),
         ("egress-gb", 729, "0.0550"), ("build-minutes", 14801, "0.0075")]
net = Decimal(0)
for item, qty, price in lines:
    exact = qty * Decimal(price)
    rounded = exact.quantize(cent, ROUND_HALF_UP)
    net += rounded
    print(f"{item:<14} {exact:>12} -> {rounded}")
vat = (net * Decimal("0.19")).quantize(cent, ROUND_HALF_UP)
print("net", net, "vat", vat, "gross", net + vat)
EOF'''

TEST_FILE = '''import os
import tempfile
import unittest

from billing.invoice import invoice_total
from billing.usage import load_usage


class InvoiceTotalTest(unittest.TestCase):
    def test_simple_invoice(self):
        net, vat, gross = invoice_total([("api-calls", 1000, 0.01), ("storage-gb", 20, 0.09)])
        self.assertEqual(("%.2f" % net, "%.2f" % vat, "%.2f" % gross), ("11.80", "2.24", "14.04"))

    def test_lines_round_half_up_like_the_ledger(self):
        # C1183, November 2026. Every line ends in a fraction of a cent, so the rounding rule
        # decides the total: accounting rounds each line to the cent, half up, then the VAT
        # (19 %, half up). The ledger says 989.80 net, 188.06 VAT, 1177.86 gross.
        # Read through load_usage() so the prices are exactly what the export contains.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "usage.csv")
            with open(path, "w") as f:
                f.write("customer,item,qty,unit_price\\n"
                        "C1183,api-calls,56248,0.0135\\nC1183,storage-gb,1763,0.0450\\n"
                        "C1183,egress-gb,729,0.0550\\nC1183,build-minutes,14801,0.0075\\n")
            lines = load_usage(path)["C1183"]
        net, vat, gross = invoice_total(lines)
        self.assertEqual(("%.2f" % net, "%.2f" % vat, "%.2f" % gross), ("989.80", "188.06", "1177.86"))


if __name__ == "__main__":
    unittest.main()
'''

INVOICE_FIXED = '''"""Invoice totals from metered usage.

Accounting's rule (see the ledger): every line is rounded to the cent, half up;
VAT is 19 % of the net total, rounded to the cent, half up.
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
VAT = Decimal("0.19")


def line_total(qty, unit_price):
    """qty x unit_price rounded to the cent, half up. unit_price is the export's string
    ("0.0135"): never a float, or 56248 x 0.0135 is not exactly 759.348."""
    return (Decimal(qty) * Decimal(unit_price)).quantize(CENT, ROUND_HALF_UP)


def invoice_total(lines):
    """(net, vat, gross) of an invoice; lines are (item, qty, unit_price).

    Must match accounting's ledger to the cent: round every line, then VAT.
    Floats rounded once at the end were off by 1-2 cents on 30 of 48 November invoices.
    """
    net = sum((line_total(q, p) for _, q, p in lines), Decimal("0"))
    vat = (net * VAT).quantize(CENT, ROUND_HALF_UP)
    return net, vat, net + vat
'''

NOTES = """# November 2026 invoices: 1-2 cent differences against the ledger

## Cause
Commit `4303bde` (Sam Okafor, 2026-11-03, "invoice: plain floats, round once at the end") replaced
Decimal arithmetic with floats: unit prices were read with `float()`, lines were no longer rounded,
and only net, VAT and gross were rounded at the end (Python's `round`, half to even on binary
floats). Accounting rounds every line to the cent, half up, then VAT. With prices like 0.0135 and
0.0075 most lines end in a fraction of a cent, so the totals drift by a cent or two either way.

## Affected
`python -m billing reconcile data/usage-2026-11.csv data/ledger-2026-11.csv` before the fix:
30 of 48 November invoices differ from the ledger (1 or 2 cents, in both directions), e.g. C1183:
ours 1177.84, ledger 1177.86. October was invoiced before the commit.

## Fix
`billing/invoice.py` uses Decimal again with per-line half-up rounding; `billing/usage.py` keeps
unit prices as the export's strings. Test `test_lines_round_half_up_like_the_ledger` (C1183).
After the fix: 48 invoices, 0 differ from the ledger.

## Timeline
- 2026-11-03: `4303bde` merged (speed-up for the big accounts).
- 2026-12-01: the November run; accounting's reconciliation finds 30 invoices off by 1-2 cents.
- Cause found, reproduced in a test, fixed (this note); not deployed yet.

## Re-issue
November invoices have not gone out yet (they go out on the 2nd): regenerate all 48 from the fixed
code; nothing to re-issue if that happens before the 2nd. If any were sent already, the 30 listed by
`reconcile` before the fix need a corrected invoice (the difference is at most 2 cents each).

## How to check
    python -m unittest discover -s tests -v
    python -m billing reconcile data/usage-2026-11.csv data/ledger-2026-11.csv   # expect "0 differ"
    python -m billing show C1183 data/usage-2026-11.csv                           # gross 1177.86

## Lessons
- The ledger is the reference: `reconcile` has to pass before invoices go out, and it would have
  caught this on Nov 3 if it ran in CI. Suggest adding it to CI with a small fixture month.
- Money stays Decimal end to end; unit prices are parsed from the export's strings, never via float.
- If Decimal becomes a hot spot again, cache per-price results or batch lines; do not change the rounding.
- Tests for money code use real rows from the export (strings), not hand-typed floats: a float literal
  such as 0.045 is already 0.04499999999999999833 before any arithmetic happens.
- Ask accounting for the ledger export earlier in the month so a mismatch shows up before the run.
"""

SUMMARY_1 = '''## Objective
- Find out why 30 of 48 November invoices differ from accounting's ledger by 1-2 cents, then fix it (user: write a failing test first; no code changes before that).

## Important Details
- `python -m billing reconcile data/usage-2026-11.csv data/ledger-2026-11.csv`: 48 invoices, 30 differ, in both directions (e.g. C1183 ours 1177.84 / ledger 1177.86; C1022 ours 574.73 / ledger 574.72).
- Accounting's rule: each line rounded to the cent, half up; then VAT 19 % of the net, half up.
- C1183: api-calls 56248 x 0.0135 = 759.348 -> 759.35; storage-gb 1763 x 0.0450 = 79.335 -> 79.34; egress-gb 729 x 0.0550 = 40.095 -> 40.10; build-minutes 14801 x 0.0075 = 111.0075 -> 111.01. Ledger: net 989.80, VAT 188.06, gross 1177.86. Ours: net 989.79, VAT 188.06, gross 1177.84.
- Cause: commit `4303bde` (Sam Okafor, 2026-11-03, "invoice: plain floats, round once at the end") replaced Decimal with per-line `quantize(CENT, ROUND_HALF_UP)` by floats rounded once at the end; `billing/usage.py` now reads unit prices with `float()`. `ee1079b` (show formatting) and `ac87939` (README) are unrelated.
- One earlier request failed with HTTP 400 on the provider side; nothing was changed by it.

## Work State
### Completed
- `tests/test_invoice.py` rewritten: new `test_lines_round_half_up_like_the_ledger` (C1183's four lines through `load_usage()` from a temp CSV, expects 989.80 / 188.06 / 1177.86); `test_simple_invoice` unchanged.

### Active
- Run the tests: the new test should fail against the float code (989.79 / 1177.84).

### Blocked
- (none)

## Next Move
1. `python -m unittest discover -s tests -v`
2. Report the failure; do not fix anything until the user asks.

## Relevant Files
- `billing/invoice.py`, `billing/usage.py`, `billing/__main__.py`, `tests/test_invoice.py`
- `data/usage-2026-11.csv`, `data/ledger-2026-11.csv`
'''

SUMMARY_2 = '''## Objective
- November invoices differ from accounting's ledger by 1-2 cents (30 of 48). Cause found and reproduced; the user now asks for the fix: Decimal again, each line rounded half up like accounting, everything else unchanged.

## Important Details
- Accounting's rule: each line rounded to the cent, half up; then VAT 19 % of the net, half up.
- Cause: commit `4303bde` (Sam Okafor, 2026-11-03) made `invoice_total()` use floats rounded once at the end and `load_usage()` parse unit prices with `float()`. Before it: `line_total()` = `(Decimal(qty) * Decimal(unit_price)).quantize(CENT, ROUND_HALF_UP)`, prices kept as strings.
- C1183 is the reference case: ledger net 989.80, VAT 188.06, gross 1177.86; ours 989.79 / 188.06 / 1177.84.

## Work State
### Completed
- `tests/test_invoice.py`: `test_lines_round_half_up_like_the_ledger` fails as expected: `AssertionError: Tuples differ: ('989.79', '188.06', '1177.84') != ('989.80', '188.06', '1177.86')`; `test_simple_invoice` passes.

### Active
- Fix `billing/invoice.py` (Decimal, per-line half-up rounding) and `billing/usage.py` (keep unit prices as strings).

### Blocked
- (none)

## Next Move
1. Read `billing/usage.py`, rewrite `billing/invoice.py`, drop the `float()` in `usage.py`.
2. Run the tests and `reconcile` (expect 0 differ).
'''

SUMMARY_3 = '''## Objective
- November invoices were 1-2 cents off accounting's ledger (30 of 48); fixed. Now: write it up in NOTES.md (cause, affected invoices, fix, re-issue). User: don't commit.

## Important Details
- Cause: commit `4303bde` (Sam Okafor, 2026-11-03): floats rounded once at the end instead of Decimal with per-line half-up rounding; unit prices parsed with `float()`.
- Before the fix: 30 of 48 invoices differed (e.g. C1183 ours 1177.84, ledger 1177.86).

## Work State
### Completed
- `billing/invoice.py`: Decimal again, each line `quantize(CENT, ROUND_HALF_UP)`, then VAT half up. `billing/usage.py`: unit prices stay strings.
- Tests: 2 pass (incl. `test_lines_round_half_up_like_the_ledger`). `reconcile`: 48 invoices, 0 differ from the ledger. C1183: net 989.80, VAT 188.06, gross 1177.86.
- `NOTES.md` written: cause, affected (30 of 48), fix, timeline, re-issue (regenerate before the 2nd), how to check, lessons.

### Active
- Final check of the working tree, then report.

### Blocked
- (none)

## Next Move
1. `git status --short` (expect `billing/invoice.py`, `billing/usage.py`, `tests/test_invoice.py` modified, `NOTES.md` new), then report to the user. Nothing is committed.

## Relevant Files
- `NOTES.md`, `billing/invoice.py`, `billing/usage.py`, `tests/test_invoice.py`
'''

SCENARIO = {
    "name": "C1",
    "title": "November invoices off by a cent",
    "project": "billing",
    "files": FILES,
    "history": HISTORY,
    "after": write_data,
    "commit": {"message": "billing: invoices from metered usage", "date": "2026-09-02T11:00:00+00:00"},
    "limit": {"context": 14000, "output": 3000},
    "summaries": [SUMMARY_1, SUMMARY_2, SUMMARY_3],
    "turns": [
        {"user": T1, "responses": [
            step(text="Running the reconciliation first.",
                 tools=[bash(f"python -m billing reconcile {USAGE} {LEDGER}")]),
            step(tools=[bash(f"head -n 5 {USAGE} && wc -l < {USAGE}"), read("billing/invoice.py")]),
            step(text="30 of the 48 November invoices differ from the ledger, by 1 or 2 cents and in both "
                      "directions (e.g. C1183: ours 1177.84, ledger 1177.86; C1022: ours 574.73, ledger 574.72).\n\n"
                      "The reason is in `billing/invoice.py`: `invoice_total()` works on plain floats and rounds "
                      "only net, VAT and gross at the end, while its own docstring states accounting's rule: round "
                      "every line to the cent, half up, then VAT. Unit prices have four decimals (0.0135, 0.0075, "
                      "...), so most lines end in fractions of a cent, and rounding once at the end drifts from the "
                      "per-line sum. No code changed."),
        ]},
        {"user": T2, "responses": [
            step(tools=[bash(f"python -m billing show C1183 {USAGE}"), bash(f"grep C1183 {LEDGER}"),
                        read("billing/__main__.py")]),
            step(tools=[bash(C1183_CHECK)]),
            step(text="C1183, line by line. None of the lines is a whole number of cents:\n\n"
                      "| line | qty x price | exact | ledger (half up) |\n| --- | --- | --- | --- |\n"
                      "| api-calls | 56248 x 0.0135 | 759.3480 | 759.35 |\n"
                      "| storage-gb | 1763 x 0.0450 | 79.3350 | 79.34 |\n"
                      "| egress-gb | 729 x 0.0550 | 40.0950 | 40.10 |\n"
                      "| build-minutes | 14801 x 0.0075 | 111.0075 | 111.01 |\n\n"
                      "Accounting: net 989.80, VAT 188.06, gross **1177.86** (matches the ledger). We add the "
                      "unrounded floats and round at the end: net 989.79, VAT 188.06, gross **1177.84**. (`show` prints "
                      "`line_total()` as it is, which is why our lines read 759.348, 79.335, ...)"),
        ]},
        {"user": T3, "responses": [
            step(tools=[bash("git log --date=short --format='%h %ad %an  %s'")]),
            step(tools=[bash("git show --date=short --format='%h %ad %an%n%n%B' 4303bde -- billing/invoice.py billing/usage.py")]),
            step(text="It started with `4303bde` (Sam Okafor, 2026-11-03), \"invoice: plain floats, round once at "
                      "the end\": it replaced Decimal with floats for speed (\"3x faster\"), dropped the per-line "
                      "`quantize(CENT, ROUND_HALF_UP)`, and made `usage.py` read unit prices with `float()`. Before "
                      "it, each line was rounded half up like the ledger. October's invoices were computed before "
                      "that commit, which is why they reconciled. The other two commits (`ee1079b`, `show` "
                      "formatting; `ac87939`, README) don't touch the totals."),
        ]},
        {"user": T4, "responses": [
            http_error(400, "Invalid 'messages': the request was rejected by the upstream provider (request id "
                            "req_7f3a91c2). Please retry.", type="invalid_request_error"),
        ]},
        {"user": T5, "responses": [
            step(tools=[read("tests/test_invoice.py")]),
            step(text="Going through `load_usage()` as well, so the test sees the prices exactly as the export has them.",
                 tools=[write("tests/test_invoice.py", TEST_FILE)]),
            step(tools=[bash("python -m unittest discover -s tests -v")]),
            step(text="Reproduced: `test_lines_round_half_up_like_the_ledger` feeds C1183's four lines to "
                      "`invoice_total()` and fails: we get net 989.79 and gross 1177.84 where the ledger has "
                      "989.80 and 1177.86. The existing test still passes. No code changed yet."),
        ]},
        {"user": T6, "responses": [
            http_error(400, "This model's maximum context length is 14000 tokens. However, your messages resulted "
                            "in {{PROMPT_TOKENS}} tokens. Please reduce the length of the messages.",
                       code="context_length_exceeded"),
            step(tools=[read("billing/usage.py")]),
            step(text="Decimal again, with per-line half-up rounding; unit prices stay the export's strings.",
                 tools=[write("billing/invoice.py", INVOICE_FIXED),
                        edit("billing/usage.py", 'int(row["qty"]), float(row["unit_price"])))',
                             'int(row["qty"]), row["unit_price"]))')]),
            step(tools=[bash("python -m unittest discover -s tests -v 2>&1 | tail -n 4"),
                        bash(f"python -m billing reconcile {USAGE} {LEDGER}")]),
            step(text="Fixed. `invoice_total()` is Decimal again: every line rounded to the cent half up, then VAT "
                      "half up, as accounting does; `usage.py` keeps unit prices as the export's strings (no "
                      "`float()`). Both tests pass, `reconcile` reports **48 invoices, 0 differ from the ledger**, "
                      "and the C1183 test now gets net 989.80, VAT 188.06, gross 1177.86."),
        ]},
        {"user": T7, "responses": [
            step(tools=[write("NOTES.md", NOTES)]),
            step(tools=[bash("git status --short")]),
            step(text="`NOTES.md` is written: cause (`4303bde`, floats rounded once at the end), the 30 of 48 "
                      "November invoices that were off by 1-2 cents, the fix and its test, and what to do: "
                      "regenerate the November invoices before they go out on the 2nd. Uncommitted: "
                      "`billing/invoice.py`, `billing/usage.py`, `tests/test_invoice.py`, `NOTES.md`."),
        ]},
    ],
}
