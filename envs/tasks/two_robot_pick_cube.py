"""TwoRobotPickCube-v1: the two-robot scene.

Task: two robots face each other from opposite ends of the table, offset sideways; each picks up
its own 4 cm cube and holds it at its own goal point in the air.

Randomisation: as PickCube for each robot. Robot k's cube centre is uniform in a 20 x 20 cm
square 0.615 m in front of its base, resting on the table with a uniform yaw; its goal is uniform
over the same square at 0-30 cm above the cube's resting height; each arm starts at its rest
keyframe with N(0, 0.02) rad noise.

Success: both cubes' centres are within 2.5 cm of their goals and every arm joint of both robots
moves slower than 0.2 rad/s.

`robot_uids` takes two uids (any of `supported_robots`, e.g. ("panda", "ur5e")); the action is
robot 0's action followed by robot 1's.
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import axis_angle_to_quat
from envs.core.registry import register_env
from envs.tasks.common import ROBOT_ROOT, build_box, build_table, object_goal_obs
from envs.tasks.pick_cube import CUBE_HALF, GOAL_THRESHOLD

SIDE = 0.3  # m: robot k's base and work square sit at y = -SIDE (k = 0) or +SIDE (k = 1)
# robot 0 at PickCube's place facing +x, robot 1 across the table facing -x
ROBOT_ROOTS = (
    sapien.Pose([ROBOT_ROOT.p[0], -SIDE, 0.0]),
    sapien.Pose([-ROBOT_ROOT.p[0], SIDE, 0.0], [0.0, 0.0, 0.0, 1.0]),
)
SQUARE_CENTRES = torch.tensor([[0.0, -SIDE], [0.0, SIDE]])  # (2, 2) env-local xy, 0.615 m in front of each base


@register_env("TwoRobotPickCube-v1", max_episode_steps=100, robot_uids=["panda", "panda"])
class TwoRobotPickCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")
    num_robots = 2
    task_state = ("goal_pos",)

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cubes = [
            build_box(self.world, f"cube_{k}", (CUBE_HALF,) * 3, color)
            for k, color in enumerate(((0.85, 0.15, 0.1, 1), (0.1, 0.3, 0.85, 1)))
        ]
        self._load_agents(ROBOT_ROOTS)
        self.goal_pos = torch.zeros(self.num_envs, self.num_robots, 3)  # (N, robots, 3)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        for k, (cube, agent) in enumerate(zip(self.cubes, self.agents)):
            centre = SQUARE_CENTRES[k]
            xy = centre + rng.uniform(-0.1, 0.1, (2,))
            yaw = rng.uniform(0, 2 * math.pi, (1,))
            quat = axis_angle_to_quat(yaw * torch.tensor([0.0, 0.0, 1.0]))
            cube.set_pose(torch.cat((xy, torch.full((n, 1), CUBE_HALF), quat), 1), env_idx)
            cube.set_velocity(torch.zeros(n, 6), env_idx)
            goal_xy = centre + rng.uniform(-0.1, 0.1, (2,))
            goal_z = rng.uniform(0.0, 0.3, (1,)) + CUBE_HALF
            self.goal_pos[env_idx, k] = torch.cat((goal_xy, goal_z), 1)
            qpos = torch.tensor(agent.spec.rest_qpos).repeat(n, 1)
            qpos[:, agent.arm] += rng.normal(0.02, (len(agent.arm),))
            agent.reset_to(qpos, env_idx)

    def _cube_pos(self) -> torch.Tensor:  # (N, robots, 3)
        return torch.stack([cube.pose()[:, :3] for cube in self.cubes], 1)

    def evaluate(self) -> dict[str, torch.Tensor]:
        cubes = self._cube_pos()
        placed = (cubes - self.goal_pos).norm(dim=2) <= GOAL_THRESHOLD  # (N, robots)
        static = torch.stack([a.is_static(0.2) for a in self.agents], 1)
        grasped = torch.stack([a.is_grasping(cubes[:, k], 2 * CUBE_HALF) for k, a in enumerate(self.agents)], 1)
        return {
            "success": (placed & static).all(1),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_obj_placed": placed,
            "is_robot_static": static,
            "is_grasped": grasped,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
        obs = {}
        for k, (cube, agent) in enumerate(zip(self.cubes, self.agents)):
            obs[agent.name] = object_goal_obs(agent.tcp_pose, cube.pose(), self.goal_pos[:, k])
            obs[agent.name]["is_grasped"] = info["is_grasped"][:, k : k + 1].float()
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """PickCube's staged reward for each robot (reach, grasp, carry, hold still; each worth
        at most 1, over 5), averaged over the robots; success scores 1."""
        cubes = self._cube_pos()
        grasped = info["is_grasped"].float()  # (N, robots)
        tcp = torch.stack([a.tcp_pose[:, :3] for a in self.agents], 1)
        arm_speed = torch.stack([a.qvel[:, a.arm].norm(dim=1) for a in self.agents], 1)
        reach = 1 - torch.tanh(5 * (cubes - tcp).norm(dim=2))
        place = 1 - torch.tanh(5 * (self.goal_pos - cubes).norm(dim=2))
        still = 1 - torch.tanh(5 * arm_speed)
        stages = reach + 2 * grasped + place * grasped + still * info["is_obj_placed"].float()
        reward = stages.mean(1) / 5.0
        return torch.where(info["success"], torch.ones_like(reward), reward)
