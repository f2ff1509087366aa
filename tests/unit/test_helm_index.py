"""Reading Helm repository indexes (pure): each chart's block is parsed on first use, with the
same result as parsing the whole document."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.registry.helmindex import (
    HelmIndexError,
    IndexCharts,
    chart_blocks,
    parse_index,
)
from argocd_image_updater_testing.helm_repo import render_index

URL = "https://charts.example.com"

# As helm repo index writes it (yaml.v2 style: list items at the key's indent).
HELM_WRITTEN = """\
apiVersion: v1
entries:
  alpha:
  - annotations:
      category: Database
      images: |
        - name: alpha
          image: docker.io/alpha:1.0
    apiVersion: v2
    created: "2026-01-02T10:00:00.123456789Z"
    description: |-
      A chart
      notes: with a colon at the start of a line
    digest: 0d1e
    name: alpha
    urls:
    - https://charts.example.com/alpha-1.1.0.tgz
    version: 1.1.0
  - apiVersion: v2
    created: "2026-01-01T10:00:00Z"
    name: alpha
    version: 1.0.0
  beta-chart:
  - apiVersion: v2
    name: beta-chart
    version: 0.1.0   # comment
generated: "2026-01-03T00:00:00Z"
serverInfo: {}
"""
# yaml.v3 style: list items indented below their key.
INDENTED = """\
apiVersion: v1
entries:
    alpha:
        - version: 1.1.0
          description: |
            alpha:
            text
        - version: 1.0.0
    beta-chart:
        - version: 0.1.0
generated: "2026-01-03T00:00:00Z"
"""


def names(charts: object) -> dict[str, list[str]]:
    assert isinstance(charts, (IndexCharts, dict)) or hasattr(charts, "items")
    return {name: [t.name for t in charts[name]] for name in charts}  # type: ignore[index,attr-defined]


def test_a_helm_written_index_is_split_into_charts_parsed_on_first_use() -> None:
    charts = parse_index(HELM_WRITTEN.encode(), URL)
    assert isinstance(charts, IndexCharts)
    assert names(charts) == {"alpha": ["1.1.0", "1.0.0"], "beta-chart": ["0.1.0"]}
    newest = charts["alpha"][0]
    assert newest.digest == "0d1e"
    assert newest.images[0].created == datetime(2026, 1, 2, 10, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        INDENTED,
        HELM_WRITTEN.replace("  alpha:", '  "alpha":'),  # quoted keys: the whole document
        "entries: {alpha: [{version: 1.1.0}, {version: 1.0.0}], beta-chart: [{version: 0.1.0}]}\n",
    ],
)
def test_other_layouts_read_the_same(text: str) -> None:
    found = names(parse_index(text.encode(), URL))
    assert found["alpha"][0] == "1.1.0" and found["beta-chart"] == ["0.1.0"]


def test_a_json_index() -> None:
    body = json.dumps({"apiVersion": "v1", "entries": {"api": [{"version": "2.0.0"}]}})
    assert names(parse_index(body.encode(), URL)) == {"api": ["2.0.0"]}


@pytest.mark.parametrize("text", ["<html>not found</html>", "entries: 3\n", "a: [\n"])
def test_not_an_index(text: str) -> None:
    with pytest.raises(HelmIndexError, match=r"index\.yaml"):
        parse_index(text.encode(), URL)


def test_blocks_match_the_whole_document_parse_on_a_generated_index() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    charts = {
        f"c{i}": {f"1.{j}.0": start + timedelta(hours=j) for j in range(5)} for i in range(20)
    }
    body = render_index(charts, URL)
    blocks = chart_blocks(body.decode())
    assert blocks is not None and len(blocks) == 20
    lazy = parse_index(body, URL)
    assert names(lazy) == {name: list(versions) for name, versions in charts.items()}


def test_one_chart_of_a_large_index_costs_little_cpu() -> None:
    """10,000 entries (2 MB): splitting plus one chart stays far below a full parse (seconds)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    charts = {
        f"chart{i}": {f"{j // 10}.{j % 10}.0": start + timedelta(hours=j) for j in range(100)}
        for i in range(100)
    }
    body = render_index(charts, URL)
    began = time.process_time()
    assert len(parse_index(body, URL)["chart42"]) == 100
    assert time.process_time() - began < 2.0
