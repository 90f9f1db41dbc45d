"""PullCube-v1.

Task: pull a 4 cm cube along the table back towards the robot into a goal region: a disc of
5 cm radius drawn on the table. PushCube-v1 with the goal on the robot's side of the cube.

Randomisation: the cube's centre is uniform in x in [-0.05, 0.1], y in [-0.1, 0.1] (m, table
frame), resting on the table with a uniform yaw; the goal's centre is the cube's plus
(U(-0.2, -0.12), U(-0.05, 0.05)); the arm starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the cube's centre is within 5 cm (in the table plane) of the goal's centre and the
cube rests on the table (its centre at most 1 cm above resting height).

For a motion planner: as PushCube-v1: `self.cube`, `self.cube_half_sizes` (N, 3),
`self.goal_pos` (N, 3), `GOAL_RADIUS`, `push_point()`: here on the cube's far side; lower the
closed gripper there and move back along `goal_pos - cube`.
"""

from __future__ import annotations

from envs.core.registry import register_env
from envs.tasks.push_cube import PushCubeEnv


@register_env("PullCube-v1", max_episode_steps=100)
class PullCubeEnv(PushCubeEnv):
    cube_x = (-0.05, 0.1)
    goal_dx = (-0.2, -0.12)
