"""PlugCharger-v1.

Task: pick up a two-prong charger lying on the table and plug it into the receptacle, a wall
section standing on its edge above the table: both prongs into their slots. The charger is a
4 x 3 x 2.4 cm base with two 16 mm long, 1.5 x 6.4 mm prongs 14 mm apart (centre to centre);
each slot is 0.5 mm wider than its prong on every side and 20 mm deep.

Randomisation: the charger rests on its base with the face its prongs leave (its frame's origin)
uniform in x in [-0.1, -0.026], y in [-0.2, 0.2], its prongs along +x turned by U(-60, 60)
degrees; the receptacle's face (its frame's origin) is 10 cm above the table, uniform in x in
[0.01, 0.1], y in [-0.1, 0.1], the face turned towards -x by U(-22.5, 22.5) degrees; the arm
starts at its rest keyframe with N(0, 0.02) rad noise on every arm joint.

Success: the charger's frame is within 5 mm of the goal pose (the receptacle's frame turned half
a turn about z: the charger's face on the receptacle's, the prongs in the slots) and its
orientation within 0.2 rad of the goal's.

For a motion planner: `self.charger` (ActorGroup; frame at the centre of the face the prongs
leave, x along the prongs, the base on the -x side), `self.charger_parts`, `self.receptacle`
(kinematic ActorGroup), `self.receptacle_parts` (its boxes in its frame), `goal_pose()`,
`charger_base_pose()` (the base's centre).
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import pose_mul, quat_angle
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import ROBOT_ROOT, Part, build_parts, build_table, place, reset_robot

BASE_HALF = (0.02, 0.015, 0.012)  # the charger's base
PRONG_HALF = (0.008, 0.00075, 0.0032)  # each prong ("peg")
PRONG_GAP = 0.007  # prong centres at y = +-PRONG_GAP
CLEARANCE = 0.0005  # per side, between a centred prong and its slot
RECEPTACLE_HALF = (0.01, 0.05, 0.05)
RECEPTACLE_Z = 0.1  # height of the receptacle's frame above the table
POS_TOLERANCE = 0.005
ROT_TOLERANCE = 0.2
WHITE = (1.0, 1.0, 1.0, 1.0)
GOLD = (0xDB / 255, 0xB5 / 255, 0x39 / 255, 1.0)
# robots that ManiSkill's task restarts after the table scene's start: at the rest keyframe (hand
# at +pi/4), with N(0, 0.02) rad on the arm drawn from the torch stream before anything else
RESTARTED_ROBOTS = ("panda_wristcam",)
HALF_TURN_Z = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # (x, y, z, qw, qx, qy, qz)

CHARGER_PARTS = [
    *(Part(PRONG_HALF, sapien.Pose([PRONG_HALF[0], y, 0]), WHITE) for y in (PRONG_GAP, -PRONG_GAP)),
    Part(BASE_HALF, sapien.Pose([-BASE_HALF[0], 0, 0]), WHITE),
]


def receptacle_parts() -> list[Part]:
    """The receptacle in its frame: a 2 x 10 x 10 cm block behind its face (x in [-0.02, 0]),
    with two slots along x of half width PRONG_HALF[1] + CLEARANCE at y = +-PRONG_GAP and half
    height PRONG_HALF[2] + CLEARANCE."""
    sy, sz = PRONG_HALF[1] + CLEARANCE, PRONG_HALF[2] + CLEARANCE  # slot half sizes
    dx, hy, hz = RECEPTACLE_HALF
    side_y = 0.5 * (hy - sy - PRONG_GAP)  # half width of the walls outside the slots
    side_z = 0.5 * (hz - sz)  # half height above and below the slots
    return [
        Part((dx, hy, side_z), sapien.Pose([-dx, 0, sz + side_z]), WHITE),
        Part((dx, hy, side_z), sapien.Pose([-dx, 0, -sz - side_z]), WHITE),
        Part((dx, side_y, hz), sapien.Pose([-dx, sy + PRONG_GAP + side_y, 0]), WHITE),
        Part((dx, side_y, hz), sapien.Pose([-dx, -sy - PRONG_GAP - side_y, 0]), WHITE),
        Part((dx, PRONG_GAP - sy, sz), sapien.Pose([-dx, 0, 0]), WHITE),  # between the slots
        # gold marks drawn where ManiSkill draws them (visual only)
        *(
            Part((dx, sy, sz), sapien.Pose([-dx, s * (PRONG_GAP / 2 + sy), 0]), GOLD, collision=False)
            for s in (-1, 1)
        ),
    ]


RECEPTACLE_PARTS = receptacle_parts()


@register_env("PlugCharger-v1", max_episode_steps=200, robot_uids="panda_wristcam")
class PlugChargerEnv(BaseEnv):
    supported_robots = ("panda",)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        base = CameraConfig("base_camera", 128, 128, math.pi / 2, 0.01, 100.0, look_at((0.3, 0, 0.6), (-0.1, 0, 0.1)))
        return [base, *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        # mounted on the receptacle: the view follows it
        pose = look_at((0.3, 0.4, 0.1), (0, 0, 0))
        return [CameraConfig("render_camera", 512, 512, 1.0, 0.01, 100.0, pose, mount="receptacle")]

    def _load_scene(self) -> None:
        build_table(self.world)
        self.charger_parts = CHARGER_PARTS
        self.receptacle_parts = RECEPTACLE_PARTS
        self.charger = build_parts(self.world, "charger", lambda i: CHARGER_PARTS)
        self.receptacle = build_parts(self.world, "receptacle", lambda i: RECEPTACLE_PARTS, body="kinematic")
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)  # the table scene's start
        if self.robot_uids in RESTARTED_ROBOTS:
            rest = torch.tensor(self.agent.spec.rest_qpos)
            qpos = rest + rng.normal(0.02, (len(rest),))
            qpos[:, self.agent.gripper] = rest[self.agent.gripper]
            self.agent.reset_to(qpos, env_idx)
        xy = rng.uniform((-0.1, -0.2), (-0.01 - 2 * PRONG_HALF[0], 0.2), (2,))
        q = rng.euler_quat(-math.pi / 3, math.pi / 3)
        place(self.charger, env_idx, torch.cat((xy, torch.full((n, 1), BASE_HALF[2])), 1), q)
        goal_xy = rng.uniform((0.01, -0.1), (0.1, 0.1), (2,))
        goal_q = rng.euler_quat(math.pi - math.pi / 8, math.pi + math.pi / 8)
        place(self.receptacle, env_idx, torch.cat((goal_xy, torch.full((n, 1), RECEPTACLE_Z)), 1), goal_q)

    def goal_pose(self) -> torch.Tensor:  # (N, 7): the charger's pose when plugged in
        """Signed as ManiSkill's pose product signs it: w >= 0."""
        goal = pose_mul(self.receptacle.pose(), HALF_TURN_Z.expand(self.num_envs, 7))
        return torch.where(goal[:, 3:4] < 0, goal * torch.tensor([1.0, 1, 1, -1, -1, -1, -1]), goal)

    def charger_base_pose(self) -> torch.Tensor:  # (N, 7): the base's centre
        offset = torch.tensor([-BASE_HALF[0], 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]).expand(self.num_envs, 7)
        return pose_mul(self.charger.pose(), offset)

    def evaluate(self) -> dict[str, torch.Tensor]:
        charger, goal = self.charger.pose(), self.goal_pose()
        distance = (goal[:, :3] - charger[:, :3]).norm(dim=1)
        angle = quat_angle(charger[:, 3:], goal[:, 3:])
        return {
            "success": (distance <= POS_TOLERANCE) & (angle <= ROT_TOLERANCE),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "obj_to_goal_dist": distance,
            "obj_to_goal_angle": angle,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose}
        if self.obs_mode.include_state:
            obs.update(charger_pose=self.charger.pose(), receptacle_pose=self.receptacle.pose(), goal_pose=self.goal_pose())
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill defines no dense reward for this task (sparse only): 1 on success, else 0."""
        return info["success"].float()
