"""What a Kubernetes client costs a process: import time and resident memory.

Each candidate runs in a new Python process, ``--rounds`` times, that first imports httpx (the
product's HTTP client, loaded by every controller anyway) and then:

- imports the candidate client (CPU time of the import; what it loaded beyond httpx);
- loads a kubeconfig (bearer token) and lists 200 Applications from the Kubernetes API fake;
- gets each of them, one request after the other (CPU time per request);

and reports its resident set after the import and its peak after the list. One untimed run per
candidate first compiles its bytecode, as installing a wheel does. Candidates:

- ``kubernetes_asyncio`` (with aiohttp underneath);
- ``lightkube`` (its generic resources; runs only where it is installed, see ``--python``);
- ``httpx (bare)``: one ``httpx.AsyncClient`` GET with the token, the floor of any client;
- ``product client``: ``argocd_image_updater.kube.client.KubeClient`` of this tree.

Candidates that are not installed in the interpreter are shown as such. To compare libraries the
product does not depend on, pass an interpreter that has them (the product's sources are put on
its ``PYTHONPATH``):

    .venv/bin/python benchmarks/kube_client.py [--rounds 3] [--python /path/to/python]

The machine is shared: CPU time of the import is the steadier figure, wall time is not shown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from common import machine

ROOT = Path(__file__).resolve().parent.parent
APPS = 200
TOKEN = "bench-token"

CHILD = r"""
import asyncio, json, resource, sys, time

def rss():
    fields = dict(
        line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

candidate, kubeconfig, url, token = sys.argv[1:5]
import httpx  # the product loads it anyway
before_modules = set(sys.modules)
base_rss, _ = rss()
cpu = time.process_time()
try:
    if candidate == "kubernetes_asyncio":
        from kubernetes_asyncio import client, config
    elif candidate == "lightkube":
        from lightkube import AsyncClient, KubeConfig
        from lightkube.generic_resource import create_namespaced_resource
    elif candidate == "product client":
        from argocd_image_updater.kube.client import APPLICATIONS, KubeClient
except ImportError as err:
    print(json.dumps({"missing": str(err)}))
    sys.exit(0)
import_cpu = time.process_time() - cpu
imported_rss, _ = rss()
loaded = sorted({m.split(".")[0] for m in set(sys.modules) - before_modules})


async def gets(get, names):
    started = time.process_time()
    for name in names:
        await get(name)
    return (time.process_time() - started) / len(names)


async def list_apps():
    if candidate == "kubernetes_asyncio":
        configuration = client.Configuration()
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        async with client.ApiClient(configuration) as api:
            custom = client.CustomObjectsApi(api)
            result = await custom.list_namespaced_custom_object(
                "argoproj.io", "v1alpha1", "argocd", "applications"
            )
            names = [item["metadata"]["name"] for item in result["items"]]
            return len(names), await gets(lambda name: custom.get_namespaced_custom_object(
                "argoproj.io", "v1alpha1", "argocd", "applications", name
            ), names)
    if candidate == "lightkube":
        app = create_namespaced_resource("argoproj.io", "v1alpha1", "Application", "applications")
        kube = AsyncClient(config=KubeConfig.from_file(kubeconfig))
        try:
            names = [item.metadata.name async for item in kube.list(app, namespace="argocd")]
            return len(names), await gets(
                lambda name: kube.get(app, name, namespace="argocd"), names
            )
        finally:
            await kube.close()
    if candidate == "product client":
        kube = await KubeClient.connect(kubeconfig)
        try:
            items, _ = await kube.list_objects(APPLICATIONS, "argocd")
            names = [item["metadata"]["name"] for item in items]
            return len(names), await gets(
                lambda name: kube.get_object(APPLICATIONS, "argocd", name), names
            )
        finally:
            await kube.close()
    path = f"{url}/apis/argoproj.io/v1alpha1/namespaces/argocd/applications"
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        response = await http.get(path)
        names = [item["metadata"]["name"] for item in response.json()["items"]]

        async def get(name):
            return (await http.get(f"{path}/{name}")).json()

        return len(names), await gets(get, names)

count, per_get = asyncio.run(list_apps())
_, peak = rss()
print(json.dumps({
    "import_cpu": import_cpu, "base_rss": base_rss, "imported_rss": imported_rss,
    "peak_rss": peak, "items": count, "loaded": loaded, "get_cpu": per_get,
}))
"""

CANDIDATES = ("httpx (bare)", "product client", "lightkube", "kubernetes_asyncio")


def run_child(python: str, candidate: str, kubeconfig: Path, url: str) -> dict[str, Any]:
    env = dict(os.environ)
    # As installed from a wheel: bytecode compiled (by the warm-up run), not parsed each time.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    result = subprocess.run(
        [python, "-c", CHILD, candidate, str(kubeconfig), url, TOKEN],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )
    if result.returncode != 0:
        raise SystemExit(f"{candidate}: {result.stderr.strip()[-2000:]}")
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


async def measure(python: str, rounds: int) -> None:
    async with KubeApiServer(token=TOKEN, namespaces=("argocd",)) as server:
        for index in range(APPS):
            server.store.put(objects.application(f"app-{index:04d}", "argocd", images=["nginx:1"]))
        with tempfile.TemporaryDirectory() as scratch:
            kubeconfig = server.write_kubeconfig(Path(scratch) / "kubeconfig", namespace="argocd")
            rows = []
            for candidate in CANDIDATES:
                runs = []
                await asyncio.to_thread(run_child, python, candidate, kubeconfig, server.url)
                for _ in range(rounds):
                    runs.append(
                        await asyncio.to_thread(
                            run_child, python, candidate, kubeconfig, server.url
                        )
                    )
                    if "missing" in runs[-1]:
                        break
                rows.append((candidate, runs))
    print(f"# Kubernetes client cost, {APPS} Applications listed once; {machine()}")
    print(f"# interpreter: {python}; {rounds} runs each, min / median")
    print(
        "| client | import CPU ms | RSS after import MB | peak RSS after one list MB "
        "| RSS added by the import MB | CPU ms per GET | top-level modules it loads beyond httpx |"
    )
    print("|---|---|---|---|---|---|---|")
    for candidate, runs in rows:
        if "missing" in runs[0]:
            print(f"| {candidate} | not installed ({runs[0]['missing']}) | | | | | |")
            continue
        assert all(r["items"] == APPS for r in runs), runs

        def cell(
            key: str, scale: float = 1.0, digits: int = 0, runs: list[dict[str, Any]] = runs
        ) -> str:
            values = [r[key] * scale for r in runs]
            return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f}"

        added = [r["imported_rss"] - r["base_rss"] for r in runs]
        loaded = [m for m in runs[0]["loaded"] if not m.startswith("_")]
        shown = ", ".join(loaded[:12]) + (
            f" (+{len(loaded) - 12} more)" if len(loaded) > 12 else ""
        )
        print(
            f"| {candidate} | {cell('import_cpu', 1000)} | {cell('imported_rss')} "
            f"| {cell('peak_rss')} | {min(added):.0f} / {statistics.median(added):.0f} "
            f"| {cell('get_cpu', 1000, 2)} | {len(loaded)}: {shown} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter of the children")
    args = parser.parse_args()
    asyncio.run(measure(args.python, args.rounds))


if __name__ == "__main__":
    main()
