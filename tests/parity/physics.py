"""PhysX settings beside ManiSkill 3.0.1's defaults (SimConfig, SceneConfig, DefaultMaterialsConfig
in mani_skill/utils/structs/types.py), read from a live PickCube-v1 env: its PhysX system, the
cube's body and collision shape, the robot's articulation."""

from __future__ import annotations

from functools import lru_cache

import gymnasium as gym

import envs  # noqa: F401  (registers)
from tests.parity import Row, Table

SOURCE = "mani_skill/utils/structs/types.py"


@lru_cache(maxsize=1)
def _live() -> dict:
    env = gym.make("PickCube-v1", num_envs=1).unwrapped
    world = env.world
    cube = world.actors["cube"].bodies[0]
    shape = cube.collision_shapes[0]
    robot = world.articulations[env.agent.name].articulations[0]
    config = world.physx.config
    material = shape.physical_material
    out = {
        "sim_freq": env.sim_freq,
        "control_freq": env.control_freq,
        "spacing": 5.0 if not world.physics.isolated else None,
        "gravity": [float(g) for g in config.gravity],
        "bounce_threshold": config.bounce_threshold,
        "enable_pcm": config.enable_pcm,
        "enable_tgs": config.enable_tgs,
        "enable_ccd": config.enable_ccd,
        "enable_enhanced_determinism": config.enable_enhanced_determinism,
        "enable_friction_every_iteration": config.enable_friction_every_iteration,
        "solver_position_iterations": (cube.solver_position_iterations, robot.solver_position_iterations),
        "solver_velocity_iterations": (cube.solver_velocity_iterations, robot.solver_velocity_iterations),
        "sleep_threshold": (cube.sleep_threshold, robot.sleep_threshold),
        "contact_offset": shape.contact_offset,
        "rest_offset": shape.rest_offset,
        "static_friction": material.static_friction,
        "dynamic_friction": material.dynamic_friction,
        "restitution": material.restitution,
    }
    env.close()
    return out


def _row(name: str, maniskill, key: str, pair: bool = False) -> Row:
    """pair: ours is (cube, robot), both compared with ManiSkill's one value."""
    want = (maniskill, maniskill) if pair else maniskill
    return Row(name, want, lambda: _live()[key], source=SOURCE, tol=1e-6)


TABLE = Table(
    title="Physics",
    order=20,
    rows=(
        _row("sim_freq (Hz)", 100, "sim_freq"),
        _row("control_freq (Hz)", 20, "control_freq"),
        _row("spacing between envs (m)", 5.0, "spacing"),
        _row("gravity", [0.0, 0.0, -9.81], "gravity"),
        _row("bounce_threshold", 2.0, "bounce_threshold"),
        _row("enable_pcm", True, "enable_pcm"),
        _row("enable_tgs", True, "enable_tgs"),
        _row("enable_ccd", False, "enable_ccd"),
        _row("enable_enhanced_determinism", False, "enable_enhanced_determinism"),
        _row("enable_friction_every_iteration", True, "enable_friction_every_iteration"),
        _row("solver_position_iterations (cube, robot)", 15, "solver_position_iterations", pair=True),
        _row("solver_velocity_iterations (cube, robot)", 1, "solver_velocity_iterations", pair=True),
        _row("sleep_threshold (cube, robot)", 0.005, "sleep_threshold", pair=True),
        _row("contact_offset (m)", 0.02, "contact_offset"),
        _row("rest_offset (m)", 0.0, "rest_offset"),
        _row("default static_friction", 0.3, "static_friction"),
        _row("default dynamic_friction", 0.3, "dynamic_friction"),
        _row("default restitution", 0.0, "restitution"),
    ),
    notes="Defaults of envs.core.world.PhysicsConfig, applied to every world. With `physics={'isolated': True}` "
    "(how demonstration files are made and replayed) every env has its own PhysX system at the origin instead of "
    "a place on the 5 m grid; the other settings are the same.",
)
