"""PlugCharger-v1: grasp the charger's base behind its centre, lift, hold the prongs on the
slots' axis a few cm out, re-aim from its measured pose, push it home."""

import torch

from demos.primitives import attr, const, grasp_at, insert, lift, parts_of, pick, pose_of, scene, table_boxes
from demos.stages import CLOSED, MoveTo, Settle, Solution
from envs.tasks.plug_charger import BASE_HALF

SOLUTION = Solution(
    env_id="PlugCharger-v1",
    robots=("panda",),
    stages=pick(grasp_at(attr("charger_grasp_pose"), const(BASE_HALF), axes=(1,)))
    + (MoveTo("lift", lift(0.08), CLOSED, screw_only=True),)
    + insert("charger", pose_of("receptacle"), lambda env, idx: torch.zeros(len(idx)) + 0.002, approach=0.06, steps=(0.02,))
    + (Settle(steps=10),),
    obstacles=scene(table_boxes, parts_of("receptacle", "receptacle_parts")),
)
