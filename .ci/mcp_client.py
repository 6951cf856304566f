"""`tracelens mcp` driven by the official MCP Python SDK (`pip install mcp`), as an agent's
client would: start the server, list its tools, analyze corpus traces (a DataLoader-bound run,
an Nsight Systems export, a rank folder), page a view, compare two runs, check rules, locate a
finding, and compare every figure with the CLI's own JSON for the same trace. Hostile calls
(a path outside the roots, a symlink out, a FIFO) must come back as tool errors, and the server
must keep answering.

Usage: python .ci/mcp_client.py TRACELENS_BINARY CORPUS_DIR [TRANSCRIPT_FILE]
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, CORPUS = sys.argv[1], os.path.abspath(sys.argv[2])
TRANSCRIPT = sys.argv[3] if len(sys.argv) > 3 else None
LOADER = "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz"
LOADER_FIXED = "kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz"
NSYS = "nsys/public/GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite"
RANKS = "other/param/dlrm_kineto"
lines = []


def field(obj, new, old):
    """An attribute under the SDK's current name or its older camelCase one."""
    return getattr(obj, new) if hasattr(obj, new) else getattr(obj, old)


def cli_json(*args):
    out = subprocess.run([BINARY, *args, "--format", "json"], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    lines.append(f"> {name} {json.dumps(arguments)}")
    lines.append(f"< {'ERROR ' if field(result, 'is_error', 'isError') else ''}{text[:1500]}{' …' if len(text) > 1500 else ''}")
    if field(result, "is_error", "isError"):
        return None, text
    return json.loads(text), text


async def main():
    hostile = tempfile.mkdtemp()
    os.symlink("/etc/passwd", os.path.join(hostile, "out.json"))
    os.mkfifo(os.path.join(hostile, "pipe.json"))
    params = StdioServerParameters(command=BINARY, args=["mcp", "--root", CORPUS, "--root", hostile])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            assert field(info, "server_info", "serverInfo").name == "tracelens", info
            tools = {t.name for t in (await session.list_tools()).tools}
            assert tools == {"analyze", "view", "diff", "check", "locate"}, tools
            lines.append(f"tools: {sorted(tools)}")

            # A DataLoader-bound run: every figure equals the CLI's JSON.
            run, _ = await call(session, "analyze", {"path": LOADER, "limit": 3})
            cli = cli_json("analyze", os.path.join(CORPUS, LOADER))
            d = cli["diagnosis"]
            assert run["verdict"]["text"] == d["verdict"]["text"]
            assert run["verdict"]["step_ns"] == d["verdict"]["step_ns"]
            assert run["verdict"]["gpu_busy_percent"] == d["verdict"]["gpu_busy_percent"]
            assert run["findings"]["total"] == len(d["findings"])
            for got, want in zip(run["findings"]["items"], d["findings"]):
                for key in ("key", "title", "estimated_win_per_step_ns", "estimated_win_percent", "predicted_step_ns", "fix"):
                    assert got[key] == want[key], (key, got[key], want[key])
            assert run["findings"]["items"][0]["kind"] == "data_loader_stall"

            # An Nsight Systems export of two processes: a job.
            job, _ = await call(session, "analyze", {"path": NSYS})
            assert job["kind"] == "job" and job["ranks"]["total"] == 2, job
            # A rank folder, its ranks paged.
            ranks, _ = await call(session, "analyze", {"path": RANKS, "limit": 3})
            assert ranks["ranks"]["total"] == 8 and ranks["ranks"]["next_offset"] == 3, ranks
            cli_job = cli_json("analyze", os.path.join(CORPUS, RANKS))
            assert ranks["verdict"] == cli_job["job"]["verdict"]

            # A view, paged: the second page continues the first, as the CLI's table has it.
            first, _ = await call(session, "view", {"path": LOADER, "view": "kernels", "limit": 5})
            second, _ = await call(session, "view", {"path": LOADER, "view": "kernels", "offset": 5, "limit": 5})
            names = [k["name"] for k in first["rows"]["items"] + second["rows"]["items"]]
            assert names == [k["name"] for k in d["top_kernels"][:10]], names

            # Two runs compared, as `tracelens diff` compares them.
            diff, _ = await call(session, "diff", {"before": LOADER, "after": LOADER_FIXED})
            cli_diff = cli_json("diff", os.path.join(CORPUS, LOADER), os.path.join(CORPUS, LOADER_FIXED))["diff"]
            assert diff["verdict"] == cli_diff["verdict"]
            assert diff["step_change_percent"] == cli_diff["step_change_percent"]

            # Rules.
            check, _ = await call(session, "check", {"path": LOADER, "rules": ["idle.data_loading.percent > 10", "memory.peak_gb > 1"]})
            outcomes = [r["outcome"] for r in check["rules"]]
            assert outcomes[0] == "fires", check

            # Where the DataLoader finding happened.
            where, _ = await call(session, "locate", {"path": LOADER, "finding": "data_loader_stall"})
            assert where["time_ranges"]["total"] > 0, where

            # Hostile paths are tool errors; the server keeps answering.
            for bad in ["/etc/passwd", os.path.join(hostile, "out.json"), os.path.join(hostile, "pipe.json"), "../../etc/passwd"]:
                got, text = await call(session, "analyze", {"path": bad})
                assert got is None, (bad, text)
            again, _ = await call(session, "analyze", {"path": LOADER, "limit": 1})
            assert again["verdict"]["text"] == d["verdict"]["text"]
    if TRANSCRIPT:
        with open(TRANSCRIPT, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    print("mcp: the Python SDK client listed 5 tools and every checked figure equals the CLI's JSON")


asyncio.run(main())
