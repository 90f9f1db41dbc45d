"""The command-line convention shared by `demos`, `replay` and `policies` (envs/cli.py), checked
over every command of their registries: `--help` exits 0 and shows defaults; bad input (unknown
flag, bad value, missing file, unknown mode) is exactly one stderr line starting `error:` and exit
code 2; the flags for the same things have the same names in all three."""

import re

import pytest

import demos.cli
import policies.cli
import replay.cli
from envs.cli import Command
from envs.cli import main as run_cli
from policies.kinds import KINDS

CLIS = {"demos": demos.cli, "replay": replay.cli, "policies": policies.cli}
COMMANDS = [(prog, [name]) for prog, cli in CLIS.items() for name in cli.COMMANDS]
COMMANDS += [("policies", ["train", kind]) for kind in KINDS]


def _run(capsys, prog: str, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = CLIS[prog].main(argv)
    except SystemExit as e:  # would be a convention breach; reported by the asserts below
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # help lines unwrapped, so flags are read whole


def _help(capsys, prog: str, argv: list[str]) -> str:
    code, out, err = _run(capsys, prog, argv + ["--help"])
    assert code == 0 and "usage" in out.lower() and not err, (prog, argv, code, err)
    return out


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][\w.-]*[a-z]", text)) - {"--help"}


@pytest.mark.parametrize("prog", CLIS)
def test_top_level_help_lists_every_command(capsys, prog):
    out = _help(capsys, prog, [])
    assert all(name in out for name in CLIS[prog].COMMANDS)


@pytest.mark.parametrize("prog,argv", COMMANDS, ids=[f"{p} {' '.join(a)}" for p, a in COMMANDS])
def test_help_exits_zero_and_shows_defaults(capsys, prog, argv):
    out = _help(capsys, prog, argv)
    if "[OPTIONS]" in out:  # a command with options (tyro shows each one's default or "required")
        assert "(default: " in out


def _one_error_line(code: int, err: str) -> str:
    lines = err.strip("\n").splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


@pytest.mark.parametrize("prog,argv", COMMANDS, ids=[f"{p} {' '.join(a)}" for p, a in COMMANDS])
def test_unknown_flag_is_one_error_line(capsys, prog, argv, tmp_path):
    required = {"generate": ["PickCube", "--n", "1"], "split": ["--val", "0.1"], "export": ["--out", str(tmp_path / "o")],
                "train": ["--data", str(tmp_path / "d.h5")]}
    files = {"merge": [str(tmp_path / "a.h5"), str(tmp_path / "b.h5")], "subset": [str(tmp_path / "a.h5"), str(tmp_path / "b.h5")],
             "recipe": ["build", str(tmp_path / "r.yaml")]}
    positional = files.get(argv[0], [] if argv[0] in ("generate", "list", "train") else [str(tmp_path / "a.h5")])
    code, _, err = _run(capsys, prog, argv + positional + required.get(argv[0], []) + ["--no-such-flag", "1"])
    line = _one_error_line(code, err)
    assert "--no-such-flag" in line or (prog, argv) == ("policies", ["train"])  # that one first wants a policy


BAD = {  # (prog, argv) -> a word the error line names
    "no command": ("demos", [], "command"),
    "unknown command": ("replay", ["no-such-command"], "no-such-command"),
    "unknown command, policies": ("policies", ["no-such-command"], "no-such-command"),
    "missing argument": ("demos", ["generate", "PickCube"], "--n"),
    "missing positional": ("replay", ["merge"], "OUT"),
    "bad int": ("demos", ["generate", "PickCube", "--n", "many"], "--n"),
    "bad shard": ("demos", ["generate", "PickCube", "--n", "1", "--shard", "3"], "i/K"),
    "unknown task": ("demos", ["generate", "NoSuchTask", "--n", "1"], "NoSuchTask"),
    "unknown obs mode": ("demos", ["generate", "PickCube", "--n", "1", "--obs-mode", "thermal"], "thermal"),
    "unknown control mode": ("demos", ["generate", "PickCube", "--n", "1", "--control-mode", "pd_teleport"], "pd_teleport"),
    "unknown executor": ("policies", ["eval", __file__, "--executor", "slurm"], "slurm"),
    "bad choice": ("replay", ["export", "x.h5", "--out", "o", "--format", "parquet"], "parquet"),
    "bad float": ("policies", ["train", "bc", "--data", "x.h5", "--policy.lr", "fast"], "--policy.lr"),
    "unknown policy": ("policies", ["train", "transformer"], "transformer"),
    "negative": ("demos", ["verify", "x.h5", "--num-envs", "0"], "--num-envs"),
    "missing file, demos": ("demos", ["info", "/no/such/file.h5"], "/no/such/file.h5"),
    "missing file, replay": ("replay", ["convert", "/no/such/file.h5", "--obs-mode", "state"], "/no/such/file.h5"),
    "missing file, policies": ("policies", ["eval", "/no/such/best.ckpt"], "/no/such/best.ckpt"),
    "missing config": ("policies", ["train", "bc", "--config", "/no/such/config.yaml"], "/no/such/config.yaml"),
    "foreign file, policies": ("policies", ["eval", __file__], "not a checkpoint of `policies train`"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_error_line(capsys, case):
    prog, argv, word = BAD[case]
    code, _, err = _run(capsys, prog, argv)
    assert word in _one_error_line(code, err)


SHARED = {  # the same things under the same names: flag -> commands that must have it
    "--num-envs": [("demos", ["generate"]), ("demos", ["verify"]), ("replay", ["convert"]), ("policies", ["eval"])],
    "--seed": [("demos", ["generate"]), ("replay", ["split"]), ("policies", ["eval"])],
    "--workers": [("demos", ["generate"]), ("replay", ["convert"]), ("policies", ["eval"])],
    "--executor": [("demos", ["generate"]), ("replay", ["convert"]), ("policies", ["eval"])],
    "--address": [("demos", ["generate"]), ("replay", ["convert"]), ("policies", ["eval"])],
    "--obs-mode": [("demos", ["generate"]), ("replay", ["convert"])],
    "--dataset.obs-mode": [("policies", ["train", kind]) for kind in KINDS],
    "--control-mode": [("demos", ["generate"]), ("replay", ["convert"])],
    "--out": [("demos", ["generate"]), ("demos", ["report"]), ("replay", ["convert"]), ("replay", ["export"])],
    "--overwrite": [("demos", ["generate"]), ("demos", ["merge"]), ("replay", ["convert"]), ("replay", ["export"])],
    "--resume": [("demos", ["generate"]), ("replay", ["convert"])],
}
OLD = {"--obs", "--control", "--keep-failures", "--only_success", "--num_envs", "--n-envs", "--env", "--num-workers"}  # never shown


def test_shared_flags_have_the_same_names(capsys):
    flags = {(prog, tuple(argv)): _flags(_help(capsys, prog, argv)) for prog, argv in COMMANDS}
    missing = [(flag, p, a) for flag, where in SHARED.items() for p, a in where if flag not in flags[(p, tuple(a))]]
    assert not missing
    shown = set().union(*flags.values())
    assert not shown & OLD
    assert all(f == f.lower() and "_" not in f for f in shown)  # dashes, never underscores


def test_old_spellings_are_still_accepted(capsys, tmp_path):
    """--obs/--control (replay convert), --keep-failures (demos generate) and --num-workers
    (policies eval) parse: the error that follows is about the input, not the flag."""
    code, _, err = _run(capsys, "replay", ["convert", str(tmp_path / "a.h5"), "--obs", "state", "--control=pd_ee_delta_pos"])
    assert "no such file" in _one_error_line(code, err)
    code, _, err = _run(capsys, "demos", ["generate", "PickCube", "--n", "1", "--keep-failures", "--out", str(tmp_path / "a.txt")])
    assert ".h5" in _one_error_line(code, err)
    code, _, err = _run(capsys, "policies", ["eval", str(tmp_path / "best.ckpt"), "--num-workers", "2"])
    assert "no such file" in _one_error_line(code, err)


def test_a_failure_that_is_not_bad_input_is_one_line_exit_1(capsys):
    def boom(args) -> int:
        raise RuntimeError("the renderer went away")

    code = run_cli("x", "A test CLI.", {"go": Command("fails", boom)}, ["go"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == ["error: RuntimeError: the renderer went away"]
