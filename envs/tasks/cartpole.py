"""CartpoleBalanceBenchmark-v1: a cart-pole for benchmarking the simulator, no robot.

Task: keep a 1 m pole, hinged freely on a cart that slides on a 2 m rail, balanced upright by
driving the cart. The cart is the only actuated joint; the action is one number per env:

| mode | action |
|---|---|
| `pd_joint_pos` | cart position target (m), within the rail |
| `pd_joint_delta_pos` | [-1, 1] × 0.1 m added to the previous cart target |
| `pd_joint_vel` | [-1, 1] × 2 m/s cart velocity target (damping-only drive) |

End-effector modes have no meaning here and get one error line naming these. The env is built
with `robot_uids="none"` (its registered default).

Randomisation: cart position U(-0.1, 0.1) m, pole angle U(-0.05, 0.05) rad from upright, both at
rest, cart target at the cart.

Success: the pole is still within 0.2 rad of upright when the episode reaches its step limit.
Fail: the pole leans more than 0.5 rad.

Observations: `agent.qpos` = (cart position, pole angle), `agent.qvel` their rates.
"""

from __future__ import annotations

import numpy as np
import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.core.world import ArticulationGroup, BatchedWorld
from envs.modes import ControlMode
from envs.sensors.config import CameraConfig, look_at

RAIL = 1.0  # the cart moves within +-RAIL m
CART_HALF = (0.1, 0.075, 0.05)
CART_MASS = 1.0
POLE_HALF_LENGTH, POLE_RADIUS, POLE_MASS = 0.5, 0.02, 0.1
DRIVE = (1000.0, 100.0, 100.0)  # cart drive stiffness (N/m), damping (N s/m), force limit (N)
CART_DELTA, CART_VEL = 0.1, 2.0
UPRIGHT, FALLEN = 0.2, 0.5  # rad
_X_TO_Y = sapien.Pose(q=[0.7071068, 0.0, 0.0, 0.7071068])  # joint frame whose x is the parent's y
_X_TO_Z = sapien.Pose(q=[0.7071068, 0.0, -0.7071068, 0.0])  # shapes along x, turned to stand along z


def _build(scene: sapien.Scene, visual: bool, pose: sapien.Pose, name: str) -> sapien.physx.PhysxArticulation:
    ab = scene.create_articulation_builder()
    rail = ab.create_link_builder()
    rail.set_name(f"{name}/rail")
    cart = ab.create_link_builder(rail)
    cart.set_name(f"{name}/cart")
    cart.set_joint_name("slider")
    cart.set_joint_properties("prismatic", [[-RAIL, RAIL]], sapien.Pose(), sapien.Pose())
    cart.add_box_collision(half_size=list(CART_HALF))
    x, y, z = (2 * h for h in CART_HALF)
    cart.set_mass_and_inertia(CART_MASS, sapien.Pose(), [CART_MASS * (a * a + b * b) / 12 for a, b in ((y, z), (x, z), (x, y))])
    pole = ab.create_link_builder(cart)
    pole.set_name(f"{name}/pole")
    pole.set_joint_name("hinge")
    hinge = sapien.Pose([0, 0, CART_HALF[2]])
    pole.set_joint_properties("revolute_unwrapped", [[-np.inf, np.inf]], hinge * _X_TO_Y, _X_TO_Y)
    along = sapien.Pose([0, 0, POLE_HALF_LENGTH]) * _X_TO_Z
    pole.add_capsule_collision(along, radius=POLE_RADIUS, half_length=POLE_HALF_LENGTH)
    inertia = POLE_MASS * (2 * POLE_HALF_LENGTH) ** 2 / 12
    pole.set_mass_and_inertia(POLE_MASS, sapien.Pose([0, 0, POLE_HALF_LENGTH]), [inertia, inertia, 1e-5])
    if visual:
        colour = sapien.render.RenderMaterial
        rail.add_box_visual(half_size=[RAIL + CART_HALF[0], 0.01, 0.01], material=colour(base_color=[0.3, 0.3, 0.3, 1]))
        ground = sapien.Pose([0, 0, -pose.p[2] - 0.01])  # a floor to see under the rail, visual only
        rail.add_box_visual(ground, half_size=[2.0, 2.0, 0.01], material=colour(base_color=[0.4, 0.4, 0.42, 1]))
        cart.add_box_visual(half_size=list(CART_HALF), material=colour(base_color=[0.2, 0.4, 0.8, 1]))
        pole.add_capsule_visual(along, POLE_RADIUS, POLE_HALF_LENGTH, colour(base_color=[0.85, 0.6, 0.2, 1]))
    for link in (rail, cart, pole):
        link.collision_groups[2] |= 1 << 30  # the cart-pole never collides with itself
    ab.set_initial_pose(pose)
    articulation = ab.build(fix_root_link=True)
    articulation.set_name(name)
    articulation.set_sleep_threshold(0.0)  # a pole starting near upright moves too slowly to stay awake
    for joint in articulation.get_active_joints():
        joint.set_friction(0.0)  # PhysX's default joint friction (0.05) would hold a near-upright pole
    return articulation


class CartPole:
    """The actuated articulation of every env, with the readings BaseEnv and the controllers use."""

    def __init__(self, world: BatchedWorld, name: str = "cartpole"):
        self.group: ArticulationGroup = world.add_articulation(
            name, lambda scene, i, pose: _build(scene, world.visual, pose, f"{name}_{i}"), sapien.Pose([0, 0, 1.0])
        )
        self.name = name
        self.targets = torch.zeros(world.num_envs, 1)  # (N, 1) cart position targets

    def set_drive(self, stiffness: float, damping: float) -> None:
        """Gains of the cart's drive (the controller sets them; the pole's hinge is free)."""
        for joints in self.group.joints:
            joints[0].set_drive_property(stiffness, damping, DRIVE[2], "force")

    @property
    def qpos(self) -> torch.Tensor:  # (N, 2): cart position (m), pole angle (rad, 0 = upright)
        return self.group.qpos()

    @property
    def qvel(self) -> torch.Tensor:  # (N, 2)
        return self.group.qvel()

    def sync_targets(self) -> None:
        self.targets = self.group.drive_targets()[:, :1]

    def set_targets(self, values: torch.Tensor) -> None:  # (N, 1)
        self.targets = values.clone()
        self.group.set_drive_targets(values, joints=[0])


class CartController:
    """One action dim for the cart; each subclass (one per control mode) sets the drive gains it
    needs and turns the clipped action into drive targets."""

    low = np.array([-1.0], dtype=np.float32)
    high = np.array([1.0], dtype=np.float32)
    action_dim = 1

    def __init__(self, cartpole: CartPole):
        self.cartpole = cartpole
        cartpole.set_drive(DRIVE[0], DRIVE[1])

    def apply(self, action: torch.Tensor) -> None:  # (N, 1)
        self._apply(torch.minimum(torch.maximum(action, torch.from_numpy(self.low)), torch.from_numpy(self.high)))

    def _apply(self, action: torch.Tensor) -> None:
        raise NotImplementedError

    def reset(self, env_idx: torch.Tensor) -> None:
        """Nothing kept beyond the drive targets."""

    sync = reset


class CartPos(CartController):
    low = np.array([-RAIL], dtype=np.float32)
    high = np.array([RAIL], dtype=np.float32)

    def _apply(self, action: torch.Tensor) -> None:
        self.cartpole.set_targets(action)


class CartDeltaPos(CartController):
    def _apply(self, action: torch.Tensor) -> None:
        self.cartpole.set_targets((self.cartpole.targets + action * CART_DELTA).clamp(-RAIL, RAIL))


class CartVel(CartController):
    def __init__(self, cartpole: CartPole):
        super().__init__(cartpole)
        cartpole.set_drive(0.0, DRIVE[1])

    def _apply(self, action: torch.Tensor) -> None:
        self.cartpole.group.set_drive_velocity_targets(action * CART_VEL, joints=[0])


CART_CONTROLLERS: dict[ControlMode, type[CartController]] = {
    ControlMode.PD_JOINT_POS: CartPos,
    ControlMode.PD_JOINT_DELTA_POS: CartDeltaPos,
    ControlMode.PD_JOINT_VEL: CartVel,
}


@register_env("CartpoleBalanceBenchmark-v1", max_episode_steps=200, robot_uids="none")
class CartpoleBalanceBenchmarkEnv(BaseEnv):
    supported_robots = ("none",)
    supported_control_modes = tuple(CART_CONTROLLERS)

    def _load_scene(self) -> None:
        self.agent = CartPole(self.world)
        self.agents = [self.agent]

    def _default_sensor_configs(self) -> list[CameraConfig]:
        """One camera 1.8 m in front of the cart's rail, looking at the pole."""
        return [CameraConfig("base_camera", 128, 128, pose=look_at((0.0, -1.8, 1.4), (0.0, 0.0, 1.3)))]

    def _make_controller(self) -> CartController:
        return CART_CONTROLLERS[self.control_mode](self.agent)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        qpos = torch.cat((rng.uniform(-0.1, 0.1, (1,)), rng.uniform(-0.05, 0.05, (1,))), 1)
        group = self.agent.group
        group.set_qpos(qpos, env_idx)
        group.set_qvel(torch.zeros_like(qpos), env_idx)
        group.set_drive_targets(qpos[:, :1], env_idx, joints=[0])
        group.set_drive_velocity_targets(torch.zeros(len(env_idx), 1), env_idx, joints=[0])
        self.agent.targets[env_idx] = qpos[:, :1]

    def evaluate(self) -> dict[str, torch.Tensor]:
        lean = self.agent.qpos[:, 1].abs()
        return {
            "success": (lean <= UPRIGHT) & (self.elapsed_steps >= self.max_episode_steps),
            "fail": lean > FALLEN,
            "pole_lean": lean,
        }

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """The product of three factors in [0, 1]: the pole's uprightness (cos of its lean,
        floored at 0), the cart's closeness to the rail's centre and the pole's calmness (each
        at least 0.5); 1 when the pole is upright and still at the centre, and on success."""
        upright = torch.cos(info["pole_lean"]).clamp(min=0.0)
        centred = 1 - 0.5 * torch.tanh(self.agent.qpos[:, 0].abs())
        calm = 1 - 0.5 * torch.tanh(self.agent.qvel[:, 1].abs() / 5)
        reward = upright * centred * calm
        return torch.where(info["success"], torch.ones_like(reward), reward)
