// Conformance harness driver: Magic Context's own fold against tierscope's, on the same
// compartments and history budgets (docs/decay.md, "Fold conformance harness"). Run with bun (Magic
// Context's storage code imports `bun:sqlite`); `magic-context-fold.sh` is the usual entry point.
//
//   bun magic-context-fold.ts gen OUT.json
//       writes the compartment sets (deterministic; the committed golden holds them).
//   bun magic-context-fold.ts run --mc CHECKOUT --cases CASES.json --work DIR --tierscope BIN
//          [--tokenizer chars|claude] [--ai-tokenizer DIR] [--golden OUT.json]
//       for every set: writes a context.db with Magic Context's own storage code
//       (openDatabase + appendCompartments), renders it at every budget with Magic Context's own
//       decay-render.ts (renderDecayedCompartments) plus materializeM0's retry, runs tierscope's
//       fold on the same file (BIN DB BUDGETS), and prints a table per set.
//
// Nothing of Magic Context is copied here: its modules are imported from CHECKOUT at run time.
// Two small pieces of inject-compartments.ts are restated because that module cannot be imported
// without private packages: the SELECT of readM0Compartments with its row mapping, and the
// ×1.15 retry of materializeM0 (slice > 1.05 × budget, at most 3 times).

import { Database } from "bun:sqlite";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const SESSION = "ses_synth_3"; // the session id of tierscope's synthetic trace (seed 3)
export const BUDGETS = Array.from({ length: 20 }, (_, i) => 20 * (i + 1));

type Row = {
    sequence: number;
    startMessage: number;
    endMessage: number;
    startMessageId: string;
    endMessageId: string;
    title: string;
    content: string;
    p1: string | null;
    p2: string | null;
    p3: string | null;
    p4: string | null;
    importance: number;
};
/** `tail_turns`: turns after the last compartment that no compartment covers yet. */
type Case = { name: string; tail_turns: number; compartments: Row[] };

// ------------------------------------------------------------------------------------------
// Compartment sets
// ------------------------------------------------------------------------------------------

function rng(seed: number): () => number {
    // mulberry32: a tiny deterministic PRNG, so the sets are the same on every machine.
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const WORDS = (
    "fixed added parser cache resolver budget fold tier compartment session request replay " +
    "src/parse.rs:88 engine/src/policy/fold.rs the a of to in and with after before because " +
    "test regression commit 1a2b3c4 952d2d9 LRU rustc 1.85 CI README --budget docs panic " +
    "off-by-one header index importance pressure curve guard retry estimator tokens naïve café " +
    "→ 92% hit rate migration v98 sqlite WAL schema column legacy upgrade historian"
).split(" ");

function sentence(r: () => number, chars: number): string {
    const out: string[] = [];
    let n = 0;
    while (n < chars) {
        const w = WORDS[Math.floor(r() * WORDS.length)];
        out.push(w);
        n += w.length + 1;
    }
    const s = out.join(" ");
    return `${s[0].toUpperCase()}${s.slice(1)}.`;
}

function makeCase(
    name: string,
    seed: number,
    n: number,
    opts: { legacy?: number; nulls?: boolean; long?: boolean; tail?: number },
): Case {
    const r = rng(seed);
    const compartments: Row[] = [];
    for (let i = 0; i < n; i++) {
        const base = opts.long ? 300 + Math.floor(r() * 1500) : 80 + Math.floor(r() * 400);
        const legacy = opts.legacy !== undefined && r() < opts.legacy;
        const uLine = r() < 0.5;
        const p: (string | null)[] = [
            sentence(r, base),
            sentence(r, Math.floor(base / 3)),
            sentence(r, Math.floor(base / 9)),
            r() < 0.3 ? "" : sentence(r, 12 + Math.floor(r() * 20)),
        ];
        if (opts.nulls && r() < 0.3) p[1 + Math.floor(r() * 3)] = null;
        compartments.push({
            sequence: i + 1,
            startMessage: 2 * i + 1,
            endMessage: 2 * i + 2,
            startMessageId: "",
            endMessageId: "",
            title: sentence(r, 10 + Math.floor(r() * 30)).slice(0, -1),
            content: legacy
                ? `${uLine ? "U: keep the exact flag names\n" : ""}${sentence(r, base)}\n${sentence(r, base)}`
                : (p[0] as string),
            p1: legacy ? null : p[0],
            p2: legacy ? null : p[1],
            p3: legacy ? null : p[2],
            p4: legacy ? null : p[3],
            importance: [50, 50, 25, 75, 90, 10, 60, 40][Math.floor(r() * 8)],
        });
    }
    return { name, tail_turns: opts.tail ?? 0, compartments };
}

/** The worked example E6 of the conformance tests (four short rows). */
function e6(): Case {
    const rows: [number, number, string, string[]][] = [
        [1, 12, "Repo setup", ["Created the workspace, pinned rustc 1.85 and added the CI job.", "Workspace created; rustc 1.85 pinned; CI added.", "Repo bootstrapped.", ""]],
        [13, 30, "Parser bug", ["Traced the panic to parse_header in src/parse.rs:88; fixed the off-by-one and added a regression test.", "Fixed off-by-one in parse_header (src/parse.rs).", "Parser panic fixed.", "parse_header fix"]],
        [31, 44, "Cache layer", ["Added an LRU cache in front of the resolver; hit rate 92% on the bench; commit 1a2b3c4.", "LRU cache before resolver (92% hits), 1a2b3c4.", "Resolver cache added.", "cache 1a2b3c4"]],
        [45, 60, "Docs pass", ["Rewrote README usage and documented the --budget flag.", "README usage + --budget documented.", "Docs updated.", ""]],
    ];
    return {
        name: "e6",
        tail_turns: 0,
        compartments: rows.map(([s, e, title, p], i) => ({
            sequence: i + 1,
            startMessage: s,
            endMessage: e,
            startMessageId: "",
            endMessageId: "",
            title,
            content: p[0],
            p1: p[0],
            p2: p[1],
            p3: p[2],
            p4: p[3],
            importance: 50,
        })),
    };
}

function cases(): Case[] {
    return [
        e6(),
        makeCase("three-short", 11, 3, {}),
        makeCase("three-short-tail", 11, 3, { tail: 2 }),
        makeCase("three-long", 12, 3, { long: true }),
        makeCase("five-tail", 13, 5, { tail: 1 }),
        makeCase("eight-nulls", 14, 8, { nulls: true }),
        makeCase("eight-legacy", 15, 8, { legacy: 0.4 }),
        makeCase("twelve-long-tail", 16, 12, { long: true, nulls: true, tail: 3 }),
        makeCase("twenty", 17, 20, { legacy: 0.15, nulls: true }),
        makeCase("forty", 18, 40, {}),
    ];
}

// ------------------------------------------------------------------------------------------
// Magic Context's side
// ------------------------------------------------------------------------------------------

type McModules = {
    openDatabase: (path: string) => any;
    appendCompartments: (db: any, sessionId: string, rows: unknown[]) => void;
    renderDecayedCompartments: (a: { compartments: unknown[]; historyBudgetTokens: number }) => string;
    renderCompartmentAtTier: (c: unknown, tier: number) => string;
    estimateTokens: (t: string) => number;
    preloadTokenizer: () => Promise<boolean>;
};

async function loadMc(root: string): Promise<McModules> {
    const src = join(resolve(root), "packages/plugin/src");
    const storage = await import(join(src, "features/magic-context/storage-db.ts"));
    const comp = await import(join(src, "features/magic-context/compartment-storage.ts"));
    const render = await import(join(src, "hooks/magic-context/decay-render.ts"));
    const fmt = await import(join(src, "hooks/magic-context/read-session-formatting.ts"));
    return {
        openDatabase: storage.openDatabase,
        appendCompartments: comp.appendCompartments,
        renderDecayedCompartments: render.renderDecayedCompartments,
        renderCompartmentAtTier: render.renderCompartmentAtTier,
        estimateTokens: fmt.estimateTokens,
        preloadTokenizer: fmt.preloadTokenizer,
    };
}

/** The rows m[0] renders, as readM0Compartments selects and maps them (temporal awareness off). */
function readRows(path: string): unknown[] {
    const db = new Database(path, { readonly: true });
    const rows = db
        .query(
            `SELECT start_message, end_message, title, content, p1, p2, p3, p4, importance, legacy
               FROM compartments WHERE session_id = ? ORDER BY sequence ASC`,
        )
        .all(SESSION) as Record<string, unknown>[];
    db.close();
    const str = (v: unknown) => (typeof v === "string" ? v : null);
    return rows.map((r) => ({
        startMessage: Number(r.start_message ?? 0),
        endMessage: Number(r.end_message ?? 0),
        title: String(r.title ?? ""),
        content: String(r.content ?? ""),
        p1: str(r.p1),
        p2: str(r.p2),
        p3: str(r.p3),
        p4: str(r.p4),
        importance: Number(r.importance ?? 50),
        legacy: Number(r.legacy ?? 0),
    }));
}

type McFold = { body: string; attempts: number; sliceTokens: number };

/** materializeM0's history part: render, then retry at budget ÷ 1.15ᵏ while the slice is over. */
function mcFold(mc: McModules, rows: unknown[], budget: number): McFold {
    const slice = (body: string) =>
        mc.estimateTokens(body.length > 0 ? `<session-history>\n${body}\n</session-history>` : "<session-history></session-history>");
    let multiplier = 1;
    let body = mc.renderDecayedCompartments({ compartments: rows, historyBudgetTokens: budget / multiplier });
    let attempts = 0;
    while (budget > 0 && slice(body) > budget * 1.05 && attempts < 3) {
        multiplier *= 1.15;
        body = mc.renderDecayedCompartments({ compartments: rows, historyBudgetTokens: budget / multiplier });
        attempts += 1;
    }
    return { body, attempts, sliceTokens: slice(body) };
}

/**
 * The tiers behind a rendered body: for each row in order, which tiers 1..5 render the text at
 * that point (several when renderings coincide, e.g. a NULL tier falling back to a denser one).
 * `null` when the body does not parse as the rows' renderings.
 */
function parseTiers(mc: McModules, rows: unknown[], body: string): number[][] | null {
    const renders = rows.map((c) => [1, 2, 3, 4].map((t) => mc.renderCompartmentAtTier(c, t)));
    const walk = (i: number, at: number, first: boolean): number[][] | null => {
        if (i === rows.length) return at === body.length ? [] : null;
        const options: { tiers: number[]; next: number; first: boolean }[] = [];
        const byText = new Map<string, number[]>();
        renders[i].forEach((text, k) => {
            if (text.length === 0) return;
            byText.set(text, [...(byText.get(text) ?? []), k + 1]);
        });
        for (const [text, tiers] of byText) {
            const sep = first ? "" : "\n\n";
            if (body.startsWith(sep + text, at)) options.push({ tiers, next: at + sep.length + text.length, first: false });
        }
        const empty = renders[i].map((t, k) => (t.length === 0 ? k + 1 : 0)).filter((k) => k > 0);
        options.push({ tiers: [...empty, 5], next: at, first });
        for (const o of options) {
            const rest = walk(i + 1, o.next, o.first);
            if (rest) return [o.tiers, ...rest];
        }
        return null;
    };
    return walk(0, 0, true);
}

// ------------------------------------------------------------------------------------------
// Running both
// ------------------------------------------------------------------------------------------

function arg(args: string[], name: string): string | undefined {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
}

async function run(args: string[]) {
    const root = arg(args, "--mc") ?? process.env.MAGIC_CONTEXT_SRC;
    const casesPath = arg(args, "--cases");
    const work = arg(args, "--work");
    const bin = arg(args, "--tierscope");
    const tokenizer = arg(args, "--tokenizer") ?? "chars";
    if (!root || !casesPath || !work || !bin) {
        console.error("usage: run --mc CHECKOUT --cases CASES.json --work DIR --tierscope BIN [--tokenizer chars|claude] [--ai-tokenizer DIR] [--golden OUT]");
        process.exit(2);
    }
    const mc = await loadMc(root);
    if (tokenizer === "claude") {
        // Magic Context finds ai-tokenizer under the working directory's node_modules.
        const dir = arg(args, "--ai-tokenizer");
        if (dir) process.chdir(dir);
        if (!(await mc.preloadTokenizer())) throw new Error("Magic Context could not load ai-tokenizer");
    }
    // Which estimator Magic Context ended up with: its fallback counts ceil(length / 3.5).
    const probe = "tierscope probes the estimator: parse_header(src/parse.rs:88) → 92% hits";
    const mcTokens = mc.estimateTokens(probe) === Math.ceil(probe.length / 3.5) ? "chars" : "claude";
    if (mcTokens !== tokenizer) {
        throw new Error(`Magic Context counts with ${mcTokens}, not ${tokenizer} (run bun with --no-install)`);
    }
    const budgets = (arg(args, "--budgets") ?? BUDGETS.join(",")).split(",").map(Number);
    const all = JSON.parse(readFileSync(casesPath, "utf8"));
    const list: Case[] = all.cases ?? all;
    mkdirSync(work, { recursive: true });
    let agree = 0;
    let total = 0;
    let everyAgree = 0;
    let everyTotal = 0;
    const golden: Record<string, unknown>[] = [];
    for (const c of list) {
        const db = join(work, `${c.name}.db`);
        for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
        // Compartment i covers turn i of tierscope's synthetic trace, by message id.
        const idsRun = Bun.spawnSync([bin, "--ids", String(c.compartments.length)], { stderr: "inherit" });
        if (idsRun.exitCode !== 0) throw new Error(`${bin} --ids failed`);
        const ids = JSON.parse(idsRun.stdout.toString()).ids as [string, string][];
        const input = c.compartments.map((r, i) => ({ ...r, startMessageId: ids[i][0], endMessageId: ids[i][1] }));
        const handle = mc.openDatabase(db);
        mc.appendCompartments(handle, SESSION, input);
        handle.close();
        const rows = readRows(db);
        const proc = Bun.spawnSync([bin, db, budgets.join(","), String(c.tail_turns ?? 0)], { stderr: "inherit" });
        if (proc.exitCode !== 0) throw new Error(`${bin} failed on ${db}`);
        const ours = JSON.parse(proc.stdout.toString()) as {
            estimator: string;
            folds: Record<string, number[]>;
            every: Record<string, [number, number[]][]>;
        };
        if (!ours.estimator.startsWith(tokenizer)) {
            throw new Error(`tierscope counts with ${ours.estimator}, Magic Context with ${tokenizer}`);
        }
        console.log(
            `\n== ${c.name}: ${rows.length} compartments (oldest first), ${c.tail_turns ?? 0} uncovered turns after them, tokens: ${tokenizer}`,
        );
        console.log("budget  retries  Magic Context          tierscope              ");
        const results: Record<string, unknown> = {};
        for (const b of budgets) {
            const f = mcFold(mc, rows, b);
            const parsed = parseTiers(mc, rows, f.body);
            if (!parsed) throw new Error(`${c.name} @ ${b}: Magic Context's body does not parse as its rows`);
            const theirs = parsed.map((ts) => ts[0]);
            const ts = ours.folds[String(b)];
            const same = ts.length === parsed.length && ts.every((t, i) => parsed[i].includes(t));
            total += 1;
            agree += same ? 1 : 0;
            const show = (t: number[]) => t.join("");
            console.log(
                `${String(b).padStart(6)}  ${String(f.attempts).padStart(7)}  ${show(theirs).padEnd(22)} ${show(ts).padEnd(22)} ${same ? "agree" : "DISAGREE"}`,
            );
            // Rows where several tiers render the same text (a NULL tier falls back to a denser
            // one): any of them is Magic Context's fold.
            const ties: Record<string, string> = {};
            parsed.forEach((t, i) => {
                if (t.length > 1) ties[String(i)] = t.join("");
            });
            results[String(b)] = { tiers: show(theirs), ties, retries: f.attempts, slice_tokens: f.sliceTokens };
            // ttl_s = 0: every request after a response folds, over the compartments closed by
            // then; Magic Context renders that prefix of the rows.
            for (const [request, prefix] of ours.every[String(b)]) {
                const part = rows.slice(0, prefix.length);
                const p = parseTiers(mc, part, mcFold(mc, part, b).body);
                const ok = p !== null && prefix.every((t, i) => p[i].includes(t));
                everyTotal += 1;
                everyAgree += ok ? 1 : 0;
                if (!ok) {
                    console.log(`        every fold: request ${request}, ${prefix.length} compartments: Magic Context ${p ? show(p.map((t) => t[0])) : "?"}, tierscope ${show(prefix)} DISAGREE`);
                }
            }
        }
        golden.push({ name: c.name, tail_turns: c.tail_turns ?? 0, compartments: c.compartments, folds: results });
    }
    console.log(`\n${agree}/${total} (set, budget) folds agree at the last request (tiers 1 = full … 4 = anchor, 5 = archived)`);
    console.log(`${everyAgree}/${everyTotal} folds agree over every request (ttl_s = 0: each request folds the compartments closed by then)`);
    const out = arg(args, "--golden");
    if (out) {
        const source = {
            magic_context: arg(args, "--mc-commit") ?? "unknown",
            renderer: "packages/plugin/src/hooks/magic-context/decay-render.ts (renderDecayedCompartments)",
            storage: "packages/plugin/src/features/magic-context/storage-db.ts, compartment-storage.ts (appendCompartments)",
            retry: "materializeM0 of inject-compartments.ts, restated: ×1.15 while the slice > 1.05 × budget, at most 3",
            tokens: tokenizer === "claude" ? "ai-tokenizer (claude encoding)" : "Magic Context's fallback ceil(length / 3.5)",
        };
        const lines = JSON.stringify({ source, tokenizer, session: SESSION, budgets, cases: golden }, null, 1)
            // One line per fold keeps the file short and readable.
            .replace(/\{\n\s*"tiers": ([^\n]*)\n\s*"ties": \{\s*([^}]*?)\s*\},\n\s*"retries": (\d+),\n\s*"slice_tokens": (\d+)\n\s*\}/g,
                (_m, t, ties, r, st) => `{ "tiers": ${t} "ties": { ${ties.replace(/\n\s*/g, " ")} }, "retries": ${r}, "slice_tokens": ${st} }`);
        writeFileSync(out, `${lines}\n`);
    }
    if (agree !== total || everyAgree !== everyTotal) process.exitCode = 1;
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "gen") {
    writeFileSync(rest[0], `${JSON.stringify({ cases: cases() }, null, 1)}\n`);
} else if (cmd === "run") {
    await run(rest);
} else {
    console.error("usage: magic-context-fold.ts gen OUT.json | run …");
    process.exit(2);
}
