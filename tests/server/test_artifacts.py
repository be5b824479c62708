"""List, fetch and zip a finished job's files; refuse names that could leave the job."""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import zipfile

import pytest

from tests.server.live import RELU, LiveServer, submit, wait_final

# Every test here runs one ReLU job through the server: SQLite in CI, PostgreSQL too in a full run.
pytestmark = pytest.mark.slow_on_postgresql


@pytest.fixture
def verified(live: LiveServer) -> tuple[LiveServer, int]:
    """A server with one verified ReLU job."""
    with live.client() as client:
        job_id = submit(client, RELU)
        assert wait_final(client, job_id)["status"] == "verified"
    return live, job_id


def test_files_are_listed_and_fetched(verified: tuple[LiveServer, int]) -> None:
    live, job_id = verified
    with live.client() as client:
        listed = client.get(f"/jobs/{job_id}/artifacts").json()
        names = {item["name"] for item in listed}
        assert {"relu_triton.py", "relu_baseline.py", "relu_accuracy.py", "relu_performance.py", "definition.md",
                "optimization_log.md", "report.json", "rounds/round_0/relu_triton.py"} <= names
        for item in listed:
            response = client.get(item["url"])
            assert response.status_code == 200, item
            assert hashlib.sha256(response.content).hexdigest() == item["sha256"]
            assert len(response.content) == item["size"]
        kernel = client.get(f"/jobs/{job_id}/artifacts/relu_triton.py")
        assert kernel.headers["content-type"] == "text/x-python; charset=utf-8"
        assert "@triton.jit" in kernel.text
        log = client.get(f"/jobs/{job_id}/artifacts/optimization_log.md")
        assert log.headers["content-type"].startswith("text/markdown") and "# Optimization log" in log.text
        report = client.get(f"/jobs/{job_id}/artifacts/report.json")
        assert report.headers["content-type"].startswith("application/json")
        assert report.json()["status"] == "verified"
        round_file = client.get(f"/jobs/{job_id}/artifacts/rounds/round_0/relu_triton.py")
        assert round_file.status_code == 200
        assert client.get(f"/jobs/{job_id}/artifacts/relu_triton.py", params={"round": 0}).text == round_file.text
        assert client.get(f"/jobs/{job_id}/artifacts/relu_triton.py", params={"round": 7}).status_code == 404
        response = client.get(f"/jobs/{job_id}/artifacts/rounds/round_0/relu_triton.py", params={"round": 1})
        assert response.status_code == 400


def test_the_zip_holds_every_file_as_fetched_alone(verified: tuple[LiveServer, int]) -> None:
    live, job_id = verified
    with live.client() as client:
        response = client.get(f"/jobs/{job_id}/artifacts.zip")
        assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
        assert f'filename="relu_job_{job_id}.zip"' in response.headers["content-disposition"]  # named by its op
        listed = {item["name"] for item in client.get(f"/jobs/{job_id}/artifacts").json()}
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            assert set(archive.namelist()) == listed
            assert "rounds/round_0/relu_triton.py" in listed
            for name in archive.namelist():
                assert archive.read(name) == client.get(f"/jobs/{job_id}/artifacts/{name}").content, name
            assert json.loads(archive.read("report.json"))["status"] == "verified"


BAD_NAMES = ["../x", "/etc/passwd", "a%2F..%2Fb", "rounds/round_x/y", "..", "a/b", "rounds/round_0/../../x",
             "%2E%2E/secret", "rounds/round_0/", "a%00b", "a%20b", "rounds//x", "x" * 300, "../../../../etc/passwd"]


def test_bad_names_are_refused_with_json(verified: tuple[LiveServer, int]) -> None:
    live, job_id = verified
    port = int(live.url.rsplit(":", 1)[1])
    for name in BAD_NAMES:
        # http.client sends the path as written (httpx would resolve the dot segments first).
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", f"/jobs/{job_id}/artifacts/{name}")
        response = connection.getresponse()
        body = response.read()
        connection.close()
        assert response.status in (400, 404), (name, body)
        assert response.getheader("content-type") == "application/json", name
        assert isinstance(json.loads(body)["detail"], str), name
    with live.client() as client:
        response = client.get(f"/jobs/{job_id}/artifacts/rounds/round_x/y")
        assert response.status_code == 400 and "bad artifact name" in response.json()["detail"]


def test_a_missing_file_is_404(verified: tuple[LiveServer, int]) -> None:
    live, job_id = verified
    with live.client() as client:
        response = client.get(f"/jobs/{job_id}/artifacts/nothing.py")
        assert response.status_code == 404
        assert response.json() == {"detail": f"job {job_id} has no file 'nothing.py'"}
