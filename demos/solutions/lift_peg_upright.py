"""LiftPegUpright-v1: grasp the lying peg at its centre, lift it clear, turn it upright, set
its lower end on the table, let go."""

from demos.primitives import grasp_target, lift, pick, stand_upright, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution

CLEAR = 0.16  # lift: the turning peg's corners (12.3 cm from its centre) then clear the table


def _half_length(margin: float):
    return lambda env, idx: env.peg_half_sizes[idx, 0] + margin


SOLUTION = Solution(
    env_id="LiftPegUpright-v1",
    robots=("panda",),
    stages=pick(grasp_target("peg", "peg_half_sizes"))
    + (
        MoveTo("lift", lift(CLEAR), CLOSED, screw_only=True),
        MoveTo("turn", stand_upright("peg"), CLOSED),
        MoveTo("lower", stand_upright("peg", _half_length(-0.002)), CLOSED, screw_only=True),
        Grip("steady", CLOSED, steps=3),  # pressed flat on the table, the arm at rest: let go
        Grip("release", OPEN),
        Settle(steps=40, hold=8),  # the released peg may rock for a moment on its end
    ),
    obstacles=table_boxes,
)
