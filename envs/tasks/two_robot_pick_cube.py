"""TwoRobotPickCube-v1, as ManiSkill 3.0.1 defines it
(mani_skill/envs/tasks/tabletop/two_robot_pick_cube.py).

Task: two robots stand at the table's sides, facing each other across it: the left one (robot 0,
at y = -0.75 m) can reach the red 4 cm "cube" but not the goal, the right one (robot 1, at
y = +0.75 m) the goal but not the cube. They hand the cube over and the right robot brings its
centre to the "goal_site" (a green sphere, hidden from observation cameras) and holds still.

Randomisation: the cube's centre is uniform in x in [-0.05, 0.05], y in [-0.2, -0.1], resting on
the table with a uniform yaw; the goal's x is uniform in [-0.05, 0.05], y in [0.1, 0.2], its
height 0-30 cm above the cube's resting centre; both robots start at the same joints: their rest
keyframe with one N(0, 0.02) rad draw on every arm joint, as ManiSkill's table scene gives both.

Success: the cube's centre is within 2.5 cm of the goal and no arm joint of the right robot
moves faster than 0.2 rad/s. Episodes last 100 control steps.

`robot_uids` takes two uids; the action is the left robot's action followed by the right's.
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import build_box, build_goal_site, build_table, place, reset_robots
from envs.tasks.pick_cube import CUBE_HALF, GOAL_THRESHOLD, STATIC_THRESHOLD, base_camera, render_camera

# the table scene's places for two robots: left at -y turned to face +y, right at +y facing -y
ROBOT_ROOTS = (
    sapien.Pose([0.0, -0.75, 0.0], [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]),
    sapien.Pose([0.0, 0.75, 0.0], [math.cos(math.pi / 4), 0.0, 0.0, -math.sin(math.pi / 4)]),
)
CUBE_X, CUBE_Y = (-0.05, 0.05), (-0.2, -0.1)
GOAL_X, GOAL_Y = (-0.05, 0.05), (0.1, 0.2)
MAX_GOAL_HEIGHT = 0.3
MAX_REWARD = 21.0


@register_env("TwoRobotPickCube-v1", max_episode_steps=100, robot_uids=["panda_wristcam", "panda_wristcam"])
class TwoRobotPickCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")
    num_robots = 2

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (CUBE_HALF,) * 3, (1.0, 0.0, 0.0, 1.0))
        self.goal_site = build_goal_site(self.world, "goal_site", GOAL_THRESHOLD, (0.0, 1.0, 0.0, 1.0))
        self._load_agents(ROBOT_ROOTS)
        self.left_init_qpos = torch.zeros(self.num_envs, self.left_agent.dof)

    @property
    def left_agent(self):
        return self.agents[0]

    @property
    def right_agent(self):
        return self.agents[1]

    def _default_sensor_configs(self) -> list[CameraConfig]:
        """The scene camera, then each robot's own cameras named "<uid>-<k>-<camera>" as
        ManiSkill's multi-agent names them, each mounted on its own robot."""
        cams = [base_camera(eye=(1.0, 0.0, 0.75), target=(0.0, 0.0, 0.25))]
        for k, agent in enumerate(self.agents):
            for cam in agent.spec.cameras:
                cams.append(CameraConfig(
                    f"{agent.spec.uid}-{k}-{cam.uid}", cam.width, cam.height, cam.fov, cam.near, cam.far, cam.pose,
                    f"{agent.name}/{cam.mount}",
                ))
        return cams

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera(eye=(1.4, 0.8, 0.75), target=(0.0, 0.1, 0.1))]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robots(self.agents, env_idx, rng)
        self.left_init_qpos[env_idx] = self.left_agent.qpos[env_idx]
        # ManiSkill's map for y: -0.15 - 0.1 u + 0.05
        xy = torch.cat((rng.uniform(*CUBE_X, (1,)), rng.uniform(CUBE_Y[1], CUBE_Y[0], (1,))), 1)
        place(self.cube, env_idx, torch.cat((xy, torch.full((n, 1), CUBE_HALF)), 1), rng.euler_quat(0, 2 * math.pi))
        goal = torch.cat((rng.uniform(*GOAL_X, (1,)), rng.uniform(*GOAL_Y, (1,)), rng.uniform(0.0, MAX_GOAL_HEIGHT, (1,)) + CUBE_HALF), 1)
        place(self.goal_site, env_idx, goal, torch.tensor([[1.0, 0, 0, 0]]).expand(n, 4))

    @property
    def goal_pos(self) -> torch.Tensor:  # (N, 3)
        return self.goal_site.pose()[:, :3]

    def evaluate(self) -> dict[str, torch.Tensor]:
        placed = (self.goal_pos - self.cube.pose()[:, :3]).norm(dim=1) <= GOAL_THRESHOLD
        static = self.right_agent.is_static(STATIC_THRESHOLD)
        return {
            "success": placed & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_obj_placed": placed,
            "is_right_arm_static": static,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        left, right = self.left_agent.tcp_pose, self.right_agent.tcp_pose
        obs = {"left_arm_tcp": left, "right_arm_tcp": right}
        if self.obs_mode.include_state:
            cube = self.cube.pose()
            obs["cube_pose"] = cube
            obs["left_arm_tcp_to_cube_pos"] = cube[:, :3] - left[:, :3]
            obs["right_arm_tcp_to_cube_pos"] = cube[:, :3] - right[:, :3]
            obs["cube_to_goal_pos"] = self.goal_pos - cube[:, :3]
        return obs

    def raw_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's staged dense reward (0 to 21): the left robot reaches the cube and pushes it
        past y = 0.05; the right robot reaches it with level, open fingers while the left one
        leaves towards y = -0.2, then grasps it; it brings its TCP to the goal while the left
        arm returns to its start; placed, both arms still; success scores 21."""
        left, right = self.left_agent, self.right_agent
        cube = self.cube.pose()[:, :3]
        zero = torch.zeros(self.num_envs)
        reach_left = 1 - torch.tanh(5 * (cube - left.tcp_pose[:, :3]).norm(dim=1))
        across = 1 - torch.tanh(5 * torch.maximum(0.05 - cube[:, 1], zero))
        reward = (reach_left + across) / 2

        tip1, tip2 = (right.group.link_pose(link)[:, :3] for link in right.finger_links)
        stage2 = 1 - torch.tanh(5 * (cube - right.tcp_pose[:, :3]).norm(dim=1))
        level = 1 - torch.tanh(5 * (tip1[:, 2] - tip2[:, 2]).abs())
        wide = 1 - torch.tanh(5 * ((tip1 - tip2).norm(dim=1) - 0.07).abs())
        stage2 = stage2 + (level + wide) / 2
        stage2 = stage2 + 1 - torch.tanh(5 * (left.tcp_pose[:, 1] + 0.2).abs())
        grasped = right.is_grasping_actor(self.cube)
        stage2 = stage2 + 2 * grasped.float()
        reward = torch.where(cube[:, 1] >= 0.0, 2 + stage2, reward)

        tcp_to_goal = (self.goal_pos - right.tcp_pose[:, :3]).norm(dim=1)
        stage3 = 2 * (1 - torch.tanh(5 * tcp_to_goal))
        stage3 = stage3 + 1 - torch.tanh((left.qpos - self.left_init_qpos).norm(dim=1))
        reward = torch.where(grasped, 8 + stage3, reward)
        reward = torch.where(grasped & (tcp_to_goal < 0.25), 12 + 2 * stage3, reward)

        still = [1 - torch.tanh(5 * a.qvel[:, a.arm].norm(dim=1)) for a in (right, left)]
        reward = torch.where(info["is_obj_placed"], 19 + (still[0] + still[1]) / 2, reward)
        return torch.where(info["success"], torch.full_like(reward, MAX_REWARD), reward)

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over 21."""
        return self.raw_dense_reward(info) / MAX_REWARD
