"""Project files for C1 (billing): metered usage -> invoices, and November's data."""

import os
import random
from decimal import Decimal, ROUND_HALF_UP

INVOICE_DECIMAL = '''"""Invoice totals from metered usage.

Accounting's rule (see the ledger): every line is rounded to the cent, half up;
VAT is 19 % of the net total, rounded to the cent, half up.
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
VAT = Decimal("0.19")


def line_total(qty, unit_price):
    return (Decimal(qty) * Decimal(unit_price)).quantize(CENT, ROUND_HALF_UP)


def invoice_total(lines):
    """(net, vat, gross) of an invoice; lines are (item, qty, unit_price)."""
    net = sum((line_total(q, p) for _, q, p in lines), Decimal("0"))
    vat = (net * VAT).quantize(CENT, ROUND_HALF_UP)
    return net, vat, net + vat
'''

INVOICE_FLOAT = '''"""Invoice totals from metered usage.

Accounting's rule (see the ledger): every line is rounded to the cent, half up;
VAT is 19 % of the net total, rounded to the cent, half up.
"""

VAT = 0.19


def line_total(qty, unit_price):
    return qty * unit_price


def invoice_total(lines):
    """(net, vat, gross) of an invoice; lines are (item, qty, unit_price).

    Plain floats, rounded once at the end: about 3x faster than Decimal on the
    big accounts, and we only need cents.
    """
    net = sum(line_total(q, p) for _, q, p in lines)
    vat = net * VAT
    return round(net, 2), round(vat, 2), round(net + vat, 2)
'''

USAGE_DECIMAL = '''"""Read the monthly usage export (customer,item,qty,unit_price)."""

import csv
from collections import defaultdict


def load_usage(path):
    """customer -> [(item, qty, unit_price)], in file order. unit_price stays a string."""
    invoices = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            invoices[row["customer"]].append((row["item"], int(row["qty"]), row["unit_price"]))
    return dict(invoices)
'''

USAGE_FLOAT = USAGE_DECIMAL.replace(
    "customer -> [(item, qty, unit_price)], in file order. unit_price stays a string.",
    "customer -> [(item, qty, unit_price)], in file order.").replace(
    'int(row["qty"]), row["unit_price"]))', 'int(row["qty"]), float(row["unit_price"])))')

MAIN = '''"""python -m billing show CUSTOMER USAGE.csv | reconcile USAGE.csv LEDGER.csv"""

import argparse
import csv
import sys

from .invoice import invoice_total, line_total
from .usage import load_usage


def show(args):
    lines = load_usage(args.usage).get(args.customer)
    if not lines:
        print(f"{args.customer}: no usage", file=sys.stderr)
        return 1
    for item, qty, price in lines:
        print(f"{item:<16} {qty:>8} x {price:<8} = {line_total(qty, price)}")
    net, vat, gross = invoice_total(lines)
    print(f"{'net':<16} {net:>30}\\n{'vat 19%':<16} {vat:>30}\\n{'gross':<16} {gross:>30}")
    return 0


def reconcile(args):
    ours = {c: invoice_total(lines)[2] for c, lines in load_usage(args.usage).items()}
    with open(args.ledger, newline="") as f:
        ledger = {r["customer"]: r["gross"] for r in csv.DictReader(f)}
    bad = 0
    for customer in sorted(ledger):
        mine = "%.2f" % ours.get(customer, 0)
        if mine != ledger[customer]:
            bad += 1
            print(f"{customer}  ours {mine:>10}  ledger {ledger[customer]:>10}")
    print(f"{len(ledger)} invoices, {bad} differ from the ledger")
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="billing")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="print one invoice")
    s.add_argument("customer")
    s.add_argument("usage")
    s.set_defaults(func=show)
    r = sub.add_parser("reconcile", help="compare our gross totals with accounting's ledger")
    r.add_argument("usage")
    r.add_argument("ledger")
    r.set_defaults(func=reconcile)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
'''

TESTS = '''import unittest

from billing.invoice import invoice_total


class InvoiceTotalTest(unittest.TestCase):
    def test_simple_invoice(self):
        net, vat, gross = invoice_total([("api-calls", 1000, "0.0100"), ("storage-gb", 20, "0.0900")])
        self.assertEqual(("%.2f" % net, "%.2f" % vat, "%.2f" % gross), ("11.80", "2.24", "14.04"))


if __name__ == "__main__":
    unittest.main()
'''

README = '''# billing

Turns the monthly metered-usage export into invoice totals. Accounting keeps the
ledger; `reconcile` compares our gross totals with it before invoices go out.

    python -m billing show C1042 data/usage-2026-11.csv
    python -m billing reconcile data/usage-2026-11.csv data/ledger-2026-11.csv
    python -m unittest discover -s tests -v

Rounding rule (accounting): each line to the cent, half up; VAT 19 % of the net, to the cent, half up.
'''

ITEMS = [("api-calls", ["0.0125", "0.0135", "0.0045", "0.0105"], (800, 60000)),
         ("storage-gb", ["0.0215", "0.0235", "0.0450"], (10, 4000)),
         ("egress-gb", ["0.0850", "0.0650", "0.0550"], (5, 900)),
         ("build-minutes", ["0.0080", "0.0075"], (100, 20000))]


def usage_rows():
    rnd = random.Random(202611)
    rows = []
    for n in range(48):
        cust = "C%04d" % (1001 + n * 7)
        for item, prices, (lo, hi) in ITEMS:
            if rnd.random() < 0.8:
                rows.append((cust, item, rnd.randrange(lo, hi), rnd.choice(prices)))
    return rows


def ledger_gross(lines):
    cent = Decimal("0.01")
    net = sum(((Decimal(q) * Decimal(p)).quantize(cent, ROUND_HALF_UP) for _, q, p in lines), Decimal(0))
    return net + (net * Decimal("0.19")).quantize(cent, ROUND_HALF_UP)


def write_data(project):
    d = os.path.join(project, "data")
    os.makedirs(d, exist_ok=True)
    rows = usage_rows()
    with open(os.path.join(d, "usage-2026-11.csv"), "w") as f:
        f.write("customer,item,qty,unit_price\n")
        for r in rows:
            f.write("%s,%s,%d,%s\n" % r)
    by = {}
    for c, i, q, p in rows:
        by.setdefault(c, []).append((i, q, p))
    with open(os.path.join(d, "ledger-2026-11.csv"), "w") as f:
        f.write("customer,gross\n")
        for c in sorted(by):
            f.write("%s,%s\n" % (c, ledger_gross(by[c])))


FILES = {
    "README.md": README,
    ".gitignore": "__pycache__/\ndata/\n",
    "billing/__init__.py": '"""Invoices from metered usage."""\n',
    "billing/__main__.py": MAIN.replace('print(f"{item:<16} {qty:>8} x {price:<8} = {line_total(qty, price)}")',
                                        'print(f"{item} {qty} x {price} = {line_total(qty, price)}")'),
    "billing/invoice.py": INVOICE_DECIMAL,
    "billing/usage.py": USAGE_DECIMAL,
    "tests/test_invoice.py": TESTS,
}

HISTORY = [
    {"message": "show: align item names and quantities", "date": "2026-10-14T10:12:00+00:00",
     "author": ("Priya Raman", "priya@example.com"),
     "files": {"billing/__main__.py": MAIN}},
    {"message": "invoice: plain floats, round once at the end\n\n"
                "Decimal was the hot spot on the big accounts (3x faster with floats).\n"
                "We only need cents, so round net, VAT and gross at the end.",
     "date": "2026-11-03T17:48:00+00:00", "author": ("Sam Okafor", "sam@example.com"),
     "files": {"billing/invoice.py": INVOICE_FLOAT, "billing/usage.py": USAGE_FLOAT,
               "tests/test_invoice.py": TESTS.replace('1000, "0.0100"', '1000, 0.01').replace('20, "0.0900"', '20, 0.09')}},
    {"message": "README: how to reconcile before invoices go out", "date": "2026-11-12T09:30:00+00:00",
     "files": {"README.md": README + "\nRun `reconcile` before the invoices go out on the 2nd of the month.\n"}},
]
