"""LiftPegUpright-v1: grasp the lying peg at its centre, lift it, turn it upright onto one end,
let go."""

from demos.primitives import grasp_target, lift, pick, place_at, table_boxes, upright
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution

SOLUTION = Solution(
    env_id="LiftPegUpright-v1",
    robots=("panda",),
    stages=pick(grasp_target("peg", "peg_half_sizes"))
    + (
        MoveTo("lift", lift(0.12), CLOSED, screw_only=True),
        # turned and lowered in one straight motion: the lower end clears the table throughout
        MoveTo("stand", place_at("peg", upright("peg", lambda env, idx: env.peg_half_sizes[idx, 0] + 0.004)), CLOSED),
        Grip("release", OPEN),
        Settle(),
    ),
    obstacles=table_boxes,
)
