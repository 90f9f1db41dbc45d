"""PlaceSphere-v1: pick the sphere, carry it above the bin, lower it until it touches the
bin's floor and let go: the bin's walls centre it as it settles.

Demos are recorded with a 100-step limit, as ManiSkill's own motion-planning demos run past the
task's 50."""

from demos.primitives import attr, carry_to, grasp_target, lift, parts_of, pick, raised, scene, table_boxes
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Settle, Solution

SOLUTION = Solution(
    env_id="PlaceSphere-v1",
    robots=("panda",),
    stages=pick(grasp_target("sphere", "sphere_half_size"))
    + (
        MoveTo("lift", lift(0.04), CLOSED, screw_only=True),
        MoveTo("carry", carry_to("sphere", raised(attr("goal_pos"), 0.04)), CLOSED),
        MoveTo("lower", carry_to("sphere", raised(attr("goal_pos"), 0.0005)), CLOSED, screw_only=True),
        Grip("release", OPEN, steps=1),
        Settle(hold=5),  # the sphere rolls to rest: end off the edge of "static", so replays reproduce it
    ),
    obstacles=scene(table_boxes, parts_of("bin", "bin_parts")),
    max_episode_steps=100,
)
