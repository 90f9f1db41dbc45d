"""PegInsertionSide-v1: grasp the peg at its centre, lift, hold it on the hole's axis in front
of the opening, re-aim from its measured pose, push it in."""

from demos.primitives import attr, grasp_at, insert, lift, parts_of, pick, pose_of, scene, table_boxes
from demos.stages import CLOSED, MoveTo, Settle, Solution
from envs.tasks.peg_insertion_side import INSERT_DEPTH


def depth(env, idx):  # the peg's centre on the hole's axis when its head is past INSERT_DEPTH
    return INSERT_DEPTH + 0.01 - env.peg_half_sizes[idx, 0]


SOLUTION = Solution(
    env_id="PegInsertionSide-v1",
    robots=("panda",),
    stages=pick(grasp_at(attr("peg_grasp_pose"), attr("peg_half_sizes")))
    + (MoveTo("lift", lift(0.08), CLOSED, screw_only=True),)
    + insert("peg", pose_of("box"), depth, approach=INSERT_DEPTH + 0.05, steps=(INSERT_DEPTH + 0.015,))
    + (Settle(steps=10),),
    obstacles=scene(table_boxes, parts_of("box", "box_parts")),
)
