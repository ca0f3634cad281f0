// Writes the vocabulary of Magic Context's token estimator (the npm package ai-tokenizer@1.0.6,
// encoding `claude`, MIT) in tiktoken format: one `base64(bytes) rank` line per token, ranks
// ascending. tierscope's `decay` policy reads it for `tier_cost = magic-context`
// (docs/decay.md).
//
//   npm install --prefix /tmp/ait ai-tokenizer@1.0.6
//   node scripts/claude-vocab.mjs /tmp/ait/node_modules/ai-tokenizer ~/.local/share/tierscope/claude.tiktoken
//
// The output is the file Magic Context itself ships as crates/mc-tokenizer/assets/claude.tiktoken
// (SHA-256 ba9ebb28e61f5872504fbe44b2f61bd825c222d7d910f55c89f5f28ab1f40e8b); the script prints the
// hash so the copy can be checked.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, out] = process.argv.slice(2);
if (!pkg || !out) {
  console.error("usage: node scripts/claude-vocab.mjs AI_TOKENIZER_PACKAGE_DIR OUT_FILE");
  process.exit(2);
}
const meta = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
if (meta.name !== "ai-tokenizer" || meta.version !== "1.0.6") {
  console.error(`expected ai-tokenizer@1.0.6 in ${pkg}, found ${meta.name}@${meta.version}`);
  process.exit(1);
}
const enc = await import(pathToFileURL(join(pkg, "dist", "encoding", "claude.js")).href);
const byRank = new Map();
const put = (bytes, rank) => {
  if (byRank.has(rank)) throw new Error(`rank ${rank} twice`);
  byRank.set(rank, Buffer.from(bytes));
};
for (const [text, rank] of Object.entries(enc.stringEncoder)) put(new TextEncoder().encode(text), rank);
for (const [bytes, rank] of enc.binaryEncoder) put(bytes, rank);
const ranks = [...byRank.keys()].sort((a, b) => a - b);
const text = ranks.map((r) => `${byRank.get(r).toString("base64")} ${r}\n`).join("");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, text);
const sha = createHash("sha256").update(text).digest("hex");
console.log(`${ranks.length} tokens, ranks ${ranks[0]}..${ranks[ranks.length - 1]}, sha256 ${sha} -> ${out}`);
