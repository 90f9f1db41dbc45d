"""`demos report` (demos/report.py): the page's content for our files and ManiSkill's, and, in headless Chromium,
that every image and video on it loads."""

from __future__ import annotations

import re

import pytest

from demos.cli import main
from demos.report import arm_dims, build_report, pick_video_episodes, summarise
from replay.trajectory import TrajectoryFile
from tests.browser import Browser, chromium
from tests.synthetic import LENGTHS, H, W, write_maniskill, write_ours
from tests.marks import slow


def sources(page: str) -> list[str]:
    return re.findall(r"""(?:src|href)=['"]([^'"]*)['"]""", page)


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """The report of each layout's file, made once (through the CLI for ours)."""
    root = tmp_path_factory.mktemp("reports")
    ours, out = write_ours(root / "demo.h5"), root / "demo.html"
    assert main(["report", str(ours), "--out", str(out)]) == 0
    return {"ours": out, "maniskill": build_report(write_maniskill(root / "ms.h5"), root / "ms.html")}


@slow  # the module's reports are built once, for all that use them
def test_report_of_our_file_with_cameras(pages):
    page = pages["ours"].read_text()
    assert "<h1>PickCube-v1: demo.h5</h1>" in page
    assert "2</span> of 4 (50.0%)" in page  # episodes 0 and 2 succeed
    # failures grouped by reason with numbers blanked: "planning failed after 13 / 33 steps"
    assert re.search(r"<td>planning failed after \d+ steps</td><td>2</td><td>50.0%</td><td>1, 3</td>", page)
    for section in ("Outcomes", "Episode length", "Actions", "Start positions", "Episodes on camera", "Episodes"):
        assert f"<h2>{section}</h2>" in page
    assert "cube (success)" not in page  # labels live inside the plots, not the text
    assert page.count("<video ") == 3 and page.count("alt='frames of episode") == 3
    assert all(s.startswith("data:") for s in sources(page))  # self-contained
    assert len(sources(page)) == 4 + 3 + 3  # plots, videos, frame strips


def test_report_default_name_and_bad_input(tmp_path, capsys):
    src = write_ours(tmp_path / "demo.h5", obs="none")
    assert main(["report", str(src)]) == 0
    page = (tmp_path / "demo.report.html").read_text()
    assert "<video" not in page and "replay convert FILE --obs-mode rgb" in page
    capsys.readouterr()
    assert main(["report", str(tmp_path / "missing.h5"), "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "no such file" in err
    assert not (tmp_path / "x.html").exists()


@slow
def test_report_of_maniskill_layout(tmp_path, pages):
    src = write_maniskill(tmp_path / "ms.h5")
    traj = TrajectoryFile(src)
    eps = summarise(traj)
    traj.close()
    assert [e.length for e in eps] == list(LENGTHS) and [e.success for e in eps] == [True, False, True, False]
    # no recorded reasons in ManiSkill's sidecar: the last step tells (episode 1 truncated, 3 as well)
    assert [e.reason for e in eps] == ["success", "time limit", "success", "time limit"]
    assert set(eps[0].start) == {"cube", "goal_site"}
    page = pages["maniskill"].read_text()
    assert page.count("<video ") == 3 and "cameras, left to right: base_camera" in page


def test_report_helpers():
    assert arm_dims(8, 1) == list(range(7))  # the gripper (last) left out
    assert arm_dims(16, 2) == list(range(7)) + list(range(8, 15))
    eps = [type("E", (), {"success": s, "length": 3, "episode_id": i}) for i, s in enumerate([1, 1, 1, 0, 0])]
    assert [e.episode_id for e in pick_video_episodes(eps, 3)] == [0, 3, 1]


@slow
def test_every_image_and_video_loads_in_chromium(pages):
    if chromium() is None:
        pytest.fail("this test opens the report in headless Chromium: `apt-get install chromium` (bash setup.sh --test does)")
    with Browser() as browser:
        for layout, cameras in (("ours", 2), ("maniskill", 1)):
            media = browser.media(pages[layout])
            images, videos = media["images"], media["videos"]
            assert len(images) == 4 + 3 and len(videos) == 3, layout
            for img in images:
                assert img["complete"] and img["width"] > 0 and img["height"] > 0, (layout, img)
            for v, eid in zip(videos, [0, 1, 2]):  # success, failure, success
                assert v["error"] is None and v["readyState"] >= 2, (layout, v)  # HAVE_CURRENT_DATA: a frame decoded
                assert (v["width"], v["height"]) == (W * cameras, H)
                assert v["duration"] == pytest.approx((LENGTHS[eid] + 1) / 20, abs=0.06)
            strips = [i for i in images if i["alt"].startswith("frames of episode")]
            assert [i["height"] for i in strips] == [H * (128 // H)] * 3  # small frames enlarged
            assert all(i["width"] > 5 * i["height"] for i in strips)
