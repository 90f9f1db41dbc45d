"""PullCube-v1 beside ManiSkill 3.0.1 (the rows are PushCube-v1's, with PullCube's values)."""

from tests.parity import Table
from tests.parity.push_cube import Spec, cube_goal_rows

SPEC = Spec(
    env_id="PullCube-v1",
    source="mani_skill/envs/tasks/tabletop/pull_cube.py",
    goal_dx=-0.2,
    success_max_z=None,
    extra_state=("tcp_pose", "goal_pos", "obj_pose"),
    extra_visual=("tcp_pose", "goal_pos"),
    push_offset=(0.02 + 2 * 0.005, 0.0, 0.0),
    z_term=False,
    max_reward=3.0,
    base_eye_target=((-0.5, 0.0, 0.25), (0.2, 0.0, -0.5)),
)

TABLE = Table(
    title=SPEC.env_id,
    env_id=SPEC.env_id,
    rows=cube_goal_rows(SPEC),
    notes="Ranges are measured over 384 seeded resets; the draws themselves are ManiSkill's (see Seeded initial states).",
)
