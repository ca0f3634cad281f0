#!/usr/bin/env python3
"""Drive OpenCode 0.1.174 through one scenario against mock_llm.py (adapted from run_scenario.py).

    run_old.py SCENARIO.py --opencode BIN --work DIR --bpe-file FILE
0.1.174: config ~/.config/opencode/config.json, message in argv, `run` does not exit after the
answer (stopped with SIGTERM once the session's newest message is a completed assistant).
"""
import argparse, glob, json, os, shutil, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_scenario as rs


def storage_root():
    return os.path.join(os.environ["HOME"], ".local", "share", "opencode", "project")


def sessions():
    return set(glob.glob(os.path.join(storage_root(), "*", "storage", "session", "info", "*.json")))


def newest_message(sid):
    files = sorted(glob.glob(os.path.join(storage_root(), "*", "storage", "session", "message", sid, "*.json")))
    if not files:
        return None
    try:
        return json.load(open(files[-1]))
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--opencode", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--bpe-file", required=True)
    ap.add_argument("--seed", required=True, help="node_modules with @ai-sdk/openai-compatible")
    a = ap.parse_args()
    sc = rs.load_scenario(a.scenario)
    name = sc["name"]
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    project = rs.make_project(sc)
    cache = os.path.join(os.environ["HOME"], ".cache", "opencode")
    os.makedirs(cache, exist_ok=True)
    json.dump({"dependencies": {"@ai-sdk/openai-compatible": "latest"}}, open(os.path.join(cache, "package.json"), "w"))
    if not os.path.exists(os.path.join(cache, "node_modules")):
        shutil.copytree(a.seed, os.path.join(cache, "node_modules"), symlinks=True)
    scen_json = os.path.join(work, f"{name}.scenario.json")
    json.dump({k: v for k, v in sc.items() if not callable(v) and k not in ("files", "history")}, open(scen_json, "w"), indent=1)
    mock_log = os.path.join(work, f"{name}.mock-requests.jsonl")
    dump = os.path.join(work, f"{name}.requests.jsonl")
    port_file = os.path.join(work, f"{name}.port")
    for p in (mock_log, dump, port_file):
        if os.path.exists(p):
            os.remove(p)
    lim = rs.limit_of(sc)
    mock = subprocess.Popen([sys.executable, os.path.join(HERE, "mock_llm.py"), "--scenario", scen_json,
                             "--project", project, "--log", mock_log, "--dump", dump, "--port-file", port_file,
                             "--bpe-file", a.bpe_file, "--tiktoken-cache", os.path.join(work, "tiktoken-cache"),
                             "--context-window", str(lim["context"]), "--max-requests", "400", "--max-lifetime", "3600"],
                            stdout=open(os.path.join(work, f"{name}.mock.out"), "w"), stderr=subprocess.STDOUT)
    rs.STARTED.append((mock, "mock"))
    result = {"scenario": name, "project": project, "session": None, "turns": [], "limit": lim}
    try:
        if not rs.wait_file(port_file, 60):
            raise SystemExit("mock did not start")
        port = int(open(port_file).read())
        cfg = {"$schema": "https://opencode.ai/config.json", "model": "mock/scripted", "autoupdate": False,
               "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock (scripted)",
                                     "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "mock-key"},
                                     "models": {"scripted": {"name": "scripted", "tool_call": True, "reasoning": True,
                                                             "limit": lim}}}}}
        d = os.path.join(os.environ["HOME"], ".config", "opencode")
        os.makedirs(d, exist_ok=True)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        env = dict(os.environ, PWD=project, OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
                   HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
                   http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9", NO_PROXY="127.0.0.1,localhost")
        sid = None
        for i, turn in enumerate(sc["turns"]):
            before = sessions()
            cmd = [a.opencode, "run", "--model", "mock/scripted"] + (["--session", sid] if sid else []) + [turn["user"]]
            rs.log(f"{name} turn {i + 1}: {turn['user'][:60]!r}")
            t0 = time.time() * 1000
            with open(os.path.join(work, f"{name}.turn{i + 1}.jsonl"), "w") as out, \
                    open(os.path.join(work, f"{name}.turn{i + 1}.stderr"), "w") as err:
                proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=out, stderr=err)
                rs.STARTED.append((proc, f"opencode run {i + 1}"))
                end = time.time() + 300
                done = False
                while time.time() < end and proc.poll() is None:
                    if not sid:
                        new = sessions() - before
                        if new:
                            sid = os.path.basename(sorted(new)[0])[:-5]
                    if sid:
                        m = newest_message(sid)
                        md = (m or {}).get("metadata", {})
                        if m and m.get("role") == "assistant" and md.get("time", {}).get("completed") \
                                and md["time"]["created"] >= t0 and not md.get("assistant", {}).get("summary"):
                            done = True
                            break
                    time.sleep(0.5)
                time.sleep(3)
                rs.stop(proc, f"opencode run {i + 1}")
            result["turns"].append({"rc": "stopped-after-answer" if done else "timeout"})
            rs.log(f"  done={done}")
        result["session"] = sid
    finally:
        for proc, pname in reversed(rs.STARTED):
            rs.stop(proc, pname)
    json.dump(result, open(os.path.join(work, f"{name}.result.json"), "w"), indent=1)
    rs.log(f"{name}: session {sid}")


if __name__ == "__main__":
    main()
