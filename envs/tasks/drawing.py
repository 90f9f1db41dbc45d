"""What ManiSkill 3.0.1's drawing tasks share (mani_skill/envs/tasks/drawing/): a white canvas on
the table, a `panda_stick` whose stick tip draws on it, the ink, a goal outline lying on the
canvas, and the success test that compares the drawing with the goal's reference points.

The drawing is made of ink dots: `max_dots` kinematic actors per env, "dot_0", "dot_1", ... (red
discs of radius 1 cm, 3 mm thick, no collision), all hidden inside the table at the start of an
episode. After every control step the next unused dot (`draw_step`, one per env) is moved: onto
the canvas under the tip when the tip is lower than 5 mm above a dot's top, else back inside the
table; a step uses up a dot either way. Dots are actors, so the drawing is part of the env state,
and `draw_step` is task state: get_state/set_state and replays reproduce a drawing exactly.

Success: every dot on the canvas lies within `threshold` (in the table plane) of one of the
goal's reference points, and every reference point has a dot on the canvas that near.
"""

from __future__ import annotations

import math

import numpy as np
import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import quat_apply
from envs.core.world import ActorGroup, BatchedWorld
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import ROBOT_ROOT, TARGET_FLAT_Q, build_table, place, reset_robot

DOT_THICKNESS = 0.003
CANVAS_THICKNESS = 0.02
CANVAS_HALF = (0.4, 0.6, CANVAS_THICKNESS / 2)
CANVAS_CENTRE = (-0.1, 0.0, CANVAS_THICKNESS / 2)
BRUSH_RADIUS = 0.01
BRUSH_COLOR = (0.8, 0.2, 0.2, 1.0)
GOAL_COLOR = (10 / 255, 10 / 255, 10 / 255, 1.0)
TOUCH_LEEWAY = 0.005  # the tip draws below a dot's top plus this (m)
TOUCH_HEIGHT = CANVAS_THICKNESS + DOT_THICKNESS + TOUCH_LEEWAY
DOT_Z = CANVAS_THICKNESS + DOT_THICKNESS / 2  # a drawn dot's centre
HIDDEN_Z = -DOT_THICKNESS  # an unused dot's centre, inside the table
GOAL_Z = 0.01  # the goal's origin; its outline and reference points lie 1 cm above it, on the canvas
LINE_HALF_WIDTH = 0.01 / 2  # the goal outline's strokes: 1 cm wide, 1 mm thick
LINE_HALF_THICKNESS = 0.001 / 2
GOAL_CENTRE = (-0.1, -0.1)  # the goal's xy: uniform in [-0.1, -0.08]^2
GOAL_SPAN = 0.02
# ManiSkill's SimConfig of the drawing tasks: few contacts, few solver iterations
DRAW_PHYSICS = {"contact_offset": 0.01, "solver_position_iterations": 4, "solver_velocity_iterations": 0}


def base_camera() -> CameraConfig:
    """The drawing tasks' observation camera: 320 x 240, fov 1.2 rad, above the canvas."""
    return CameraConfig("base_camera", 320, 240, fov=1.2, near=0.01, far=100.0, pose=look_at((0.3, 0.0, 0.8), (0.0, 0.0, 0.1)))


def render_camera() -> CameraConfig:
    """The drawing tasks' human-view camera: 1280 x 960 from the observation camera's pose."""
    return CameraConfig("render_camera", 1280, 960, fov=1.2, near=0.01, far=100.0, pose=look_at((0.3, 0.0, 0.8), (0.0, 0.0, 0.1)))


def _material(color) -> sapien.render.RenderMaterial:
    return sapien.render.RenderMaterial(base_color=list(color))


def build_canvas(world: BatchedWorld) -> ActorGroup:
    """The white "canvas": a static 80 x 120 x 2 cm box on the table."""

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        b.add_box_collision(half_size=list(CANVAS_HALF))
        if world.visual:
            b.add_box_visual(half_size=list(CANVAS_HALF), material=_material((1.0, 1.0, 1.0, 1.0)))
        return b.build_static(name=f"canvas_{i}")

    return world.add_actor("canvas", build, sapien.Pose(list(CANVAS_CENTRE)))


def build_dots(world: BatchedWorld, count: int) -> list[ActorGroup]:
    """`count` ink dots per env, "dot_0" ... (kinematic, drawn only in visual worlds)."""

    def build(scene: sapien.Scene, i: int, k: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        if world.visual:  # SAPIEN's cylinder lies along its local x; TARGET_FLAT_Q stands it up
            b.add_cylinder_visual(radius=BRUSH_RADIUS, half_length=DOT_THICKNESS / 2, material=_material(BRUSH_COLOR))
        b.set_physx_body_type("kinematic")
        return b.build(name=f"dot_{k}_{i}")

    hidden = sapien.Pose([0.0, 0.0, HIDDEN_Z], list(TARGET_FLAT_Q))
    # in the env state, but written there by the task from its own record of where it put them:
    # reading a thousand actors back every step would cost more than the physics
    return [world.add_actor(f"dot_{k}", lambda s, i, k=k: build(s, i, k), hidden, in_state=False) for k in range(count)]


def build_outline(world: BatchedWorld, name: str, segments: np.ndarray) -> ActorGroup:
    """The goal drawn as strokes 1 cm wide along `segments` ((n, 2, 3) end points in the goal's
    frame): a kinematic actor with no collision, seen by every camera."""
    mids = segments.mean(1)
    half_lengths = np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1) / 2
    yaws = np.arctan2(segments[:, 1, 1] - mids[:, 1], segments[:, 1, 0] - mids[:, 0])

    def build(scene: sapien.Scene, i: int) -> sapien.Entity:
        b = scene.create_actor_builder()
        if world.visual:
            for mid, half, yaw in zip(mids, half_lengths, yaws):
                pose = sapien.Pose(list(mid), [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
                b.add_box_visual(pose, half_size=[float(half), LINE_HALF_WIDTH, LINE_HALF_THICKNESS], material=_material(GOAL_COLOR))
        b.set_physx_body_type("kinematic")
        return b.build(name=f"{name}_{i}")

    return world.add_actor(name, build, sapien.Pose([0.0, 0.0, 0.1]))


def coverage(dots: torch.Tensor, points: torch.Tensor, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Dots (N, D, 3) (drawn ones at z >= 0) against reference points (N, R, 2), in the table
    plane: which points have a drawn dot within `threshold` (N, R), and whether some drawn dot
    lies farther than that from every point (N,)."""
    drawn = dots[:, :, 2] >= 0  # (N, D)
    d2 = ((dots[:, :, None, :2].double() - points[:, None].double()) ** 2).sum(-1)  # (N, D, R)
    near = d2.sqrt() < threshold
    hit = (near & drawn[:, :, None]).any(1)
    stray = (drawn & ~near.any(2)).any(1)
    return hit, stray


class DrawingEnv(BaseEnv):
    """A drawing task: subclasses give `max_dots`, `threshold`, `goal_name`, the goal's
    `segments` ((n, 2, 3) strokes in its frame) and `vertices` ((V, 3) in its frame, on the
    canvas), and may override `reference` (the points success compares the drawing with; by
    default the vertices themselves).

    For a motion planner: `self.points` (N, V, 3): the vertices in the env frame, in drawing
    order; `self.canvas` and `self.canvas_half_size` (N, 3) for the obstacle."""

    supported_robots = ("panda_stick",)
    default_physics = DRAW_PHYSICS
    task_state = ("draw_step",)
    max_dots: int = 0
    threshold: float = 0.0
    goal_name: str = "goal_tri"
    segments: np.ndarray
    vertices: np.ndarray

    def reference(self, points: torch.Tensor) -> torch.Tensor:
        """(n, R, 2): the points success compares the drawing with, from vertices (n, V, 3)."""
        return points[:, :, :2]

    def _load_scene(self) -> None:
        build_table(self.world)
        self.canvas = build_canvas(self.world)
        self.canvas_half_size = torch.tensor(CANVAS_HALF).expand(self.num_envs, 3)
        self.dots = build_dots(self.world, self.max_dots)
        self._dot_index = {dot.name: k for k, dot in enumerate(self.dots)}
        self._dot_q = self.dots[0].pose()[:1, 3:].clone()  # their orientation as the simulator keeps it
        self.goal = build_outline(self.world, self.goal_name, self.segments)
        self.draw_step = torch.zeros(self.num_envs, dtype=torch.int64)
        self.dot_pos = torch.zeros(self.num_envs, self.max_dots, 3)  # the dots' centres (unused ones at z < 0)
        self.dot_pos[:, :, 2] = HIDDEN_Z
        self.points = torch.zeros(self.num_envs, len(self.vertices), 3)
        self.reference_xy = self.reference(self.points)
        # success so far, updated as dots are placed (recomputed from the dots after set_state)
        self.reference_hit = torch.zeros(self.reference_xy.shape[:2], dtype=torch.bool)  # (N, R)
        self.stray = torch.zeros(self.num_envs, dtype=torch.bool)  # a drawn dot far from every point
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera()]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera()]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng, noise=0.0)
        xy = rng.uniform(0.0, GOAL_SPAN, (2,)) + torch.tensor(GOAL_CENTRE)
        centre = torch.cat((xy, torch.full((n, 1), GOAL_Z)), 1)
        place(self.goal, env_idx, centre, rng.euler_quat(0.0, 2 * math.pi))
        self._goal_points(env_idx)
        self.draw_step[env_idx] = 0
        hidden = torch.tensor([[0.0, 0.0, HIDDEN_Z, *TARGET_FLAT_Q]]).expand(n, 7)
        for dot in self.dots:
            dot.set_pose(hidden, env_idx)
        self.dot_pos[env_idx] = torch.tensor([0.0, 0.0, HIDDEN_Z])
        self.reference_hit[env_idx] = False
        self.stray[env_idx] = False

    def _goal_points(self, env_idx: torch.Tensor) -> None:
        """The vertices and reference points of envs env_idx from their goal's pose."""
        goal = self.goal.pose()[env_idx]  # (n, 7)
        local = torch.as_tensor(self.vertices, dtype=torch.float32).expand(len(env_idx), -1, 3)
        q = goal[:, None, 3:].expand(-1, local.shape[1], 4)
        self.points[env_idx] = quat_apply(q.reshape(-1, 4), local.reshape(-1, 3)).reshape(local.shape) + goal[:, None, :3]
        self.reference_xy[env_idx] = self.reference(self.points[env_idx])

    def _after_control_step(self) -> None:
        tip = self.agent.tcp_pose[:, :3]
        touching = tip[:, 2] < TOUCH_HEIGHT
        pos = torch.where(touching[:, None], torch.cat((tip[:, :2], torch.full_like(tip[:, :1], DOT_Z)), 1),
                          torch.tensor([0.0, 0.0, HIDDEN_Z]))
        for k in self.draw_step.unique().tolist():
            if k >= self.max_dots:  # out of ink: nothing more is drawn until the next reset
                continue
            idx = torch.nonzero(self.draw_step == k).flatten()
            self.dots[k].set_pose(torch.cat((pos[idx], torch.tensor([TARGET_FLAT_Q]).expand(len(idx), 4)), 1), idx)
            self.dot_pos[idx, k] = pos[idx]
            hit, stray = coverage(pos[idx, None], self.reference_xy[idx], self.threshold)
            self.reference_hit[idx] |= hit
            self.stray[idx] |= stray
        self.draw_step = (self.draw_step + 1).clamp(max=self.max_dots)

    def get_state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """The env state with every dot's (N, 13) state under its actor name, in build order."""
        state = super().get_state_dict()
        q = self._dot_q.expand(self.num_envs, 4)
        still = torch.zeros(self.num_envs, 6)
        own = state["actors"]
        state["actors"] = {
            name: own[name] if name in own else torch.cat((self.dot_pos[:, self._dot_index[name]], q, still), 1)
            for name in self.world.actors
            if name in own or name in self._dot_index
        }
        return state

    def set_state_dict(self, state, env_idx=None) -> None:
        super().set_state_dict(state, env_idx)
        self._goal_points(torch.arange(self.num_envs))
        self.dot_pos = torch.stack([dot.pose()[:, :3] for dot in self.dots], 1)
        self.reference_hit, self.stray = coverage(self.dot_pos, self.reference_xy, self.threshold)

    def evaluate(self) -> dict[str, torch.Tensor]:
        return {
            "success": self.reference_hit.all(1) & ~self.stray,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        obs = {"tcp_pose": tcp}
        if self.obs_mode.include_state:
            goal = self.goal.pose()
            obs["goal_pose"] = goal
            obs["tcp_to_verts_pos"] = (self.points - tcp[:, None, :3]).reshape(self.num_envs, -1)
            obs["goal_pos"] = goal[:, :3]
            obs["vertices"] = self.points.reshape(self.num_envs, -1)
        return obs
