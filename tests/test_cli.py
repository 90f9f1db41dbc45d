"""The command-line convention shared by `demos`, `replay` and `policies`: every command's --help
exits 0 and prints usage; an unknown command ends in an error line naming it, exit 2."""

import pytest

from demos.cli import main as demos_main
from policies.cli import main as policies_main
from replay.cli import main as replay_main

HELP = [
    (demos_main, []), (demos_main, ["generate"]), (demos_main, ["verify"]),
    (replay_main, []), (replay_main, ["convert"]), (replay_main, ["merge"]),
    (policies_main, []), (policies_main, ["train"]), (policies_main, ["train", "diffusion"]), (policies_main, ["eval"]),
]


@pytest.mark.parametrize("main,argv", HELP, ids=[f"{m.__module__.split('.')[0]} {' '.join(a)}" for m, a in HELP])
def test_help_exits_zero(capsys, main, argv):
    try:
        code = main(argv + ["--help"])
    except SystemExit as e:  # argparse's own --help
        code = e.code
    out, err = capsys.readouterr()
    assert code == 0 and "usage" in out.lower() and "error" not in err.lower()


@pytest.mark.parametrize("main", [demos_main, replay_main, policies_main])
def test_unknown_command_is_one_error_line(capsys, main):
    try:
        code = main(["no-such-command"])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "error" in err[-1] and "no-such-command" in err[-1]
