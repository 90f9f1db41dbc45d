"""mplib 0.2.1 behind one call: plan the arm from a joint configuration to a TCP pose.

Frames: goals and obstacles are given in the robot's root frame (the planner's world). Screw
motion is tried first (straight-line, fast, predictable); RRTConnect is the fallback. The result
is a time-parameterised joint trajectory sampled at the control period, one row per control
step, ready to execute as pd_joint_pos targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.robots import get_robot


@dataclass(frozen=True)
class Box:
    """An obstacle: pose (7,) = xyz + wxyz quaternion in the root frame, half extents (3,)."""

    name: str
    pose: tuple[float, ...]
    half_size: tuple[float, float, float]


@dataclass(frozen=True)
class PlanRequest:
    robot_uid: str
    qpos: tuple[float, ...]  # full robot qpos
    goal: tuple[float, ...]  # (7,) TCP pose in the root frame
    obstacles: tuple[Box, ...] = ()
    attached: Box | None = None  # a held object, pose relative to the TCP
    screw_only: bool = False
    control_dt: float = 0.05


class ArmPlanner:
    """One mplib planner per robot; obstacles are replaced on every call."""

    def __init__(self, robot_uid: str):
        import mplib  # imported here: planning runs in its own processes

        self._mplib = mplib
        spec = get_robot(robot_uid)
        self.spec = spec
        self.planner = mplib.Planner(
            urdf=str(spec.urdf),
            srdf=str(spec.srdf),
            move_group=spec.tcp_link,
            joint_vel_limits=np.full(len(spec.arm_joints), 1.5),
            joint_acc_limits=np.full(len(spec.arm_joints), 3.0),
        )
        self._objects: list[str] = []

    def _set_obstacles(self, boxes: tuple[Box, ...], attached: Box | None) -> None:
        from mplib.collision_detection import fcl

        world = self.planner.planning_world
        for name in self._objects:
            world.remove_object(name)
        self._objects = []
        for b in boxes:
            shape = fcl.CollisionObject(fcl.Box(2 * np.asarray(b.half_size)), self._mplib.Pose())
            world.add_object(fcl.FCLObject(b.name, self._mplib.Pose(b.pose[:3], b.pose[3:]), [shape], [self._mplib.Pose()]))
            self._objects.append(b.name)
        for name in world.get_object_names():
            if world.is_object_attached(name):
                world.detach_object(name, also_remove=True)
        if attached is not None:
            self.planner.update_attached_box(2 * np.asarray(attached.half_size), self._mplib.Pose(attached.pose[:3], attached.pose[3:]))

    def plan(self, req: PlanRequest) -> tuple[np.ndarray | None, str]:
        """(T, n_arm) joint targets, or None and why."""
        self._set_obstacles(req.obstacles, req.attached)
        goal = self._mplib.Pose(req.goal[:3], req.goal[3:])
        # a closed gripper's targets lie past its joint limits (to keep squeezing); mplib's screw
        # planner rejects a start outside the limits, so plan from the nearest admissible one
        limits = self.planner.joint_limits
        qpos = np.clip(np.asarray(req.qpos, dtype=np.float64), limits[:, 0], limits[:, 1])
        result = self.planner.plan_screw(goal, qpos, time_step=req.control_dt)
        if result["status"] != "Success" and not req.screw_only:
            result = self.planner.plan_pose(goal, qpos, time_step=req.control_dt, planning_time=1.0)
        if result["status"] != "Success":
            return None, str(result["status"])
        return np.asarray(result["position"], dtype=np.float32), "Success"
