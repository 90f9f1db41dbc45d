"""Training and evaluation configs: dataclasses that validate themselves.

A run is a `RunConfig` with sections `dataset`, `policy`, `train`, `eval`; each policy kind
(policies/kinds/) subclasses it with its own `PolicyConfig`. The YAML files in configs/ hold the
same sections; `policies.kinds.load_run` merges one over the kind's defaults and rejects unknown
keys, and the CLI (tyro) is generated from these classes, so `--help` shows every field with the
comment written under it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
import yaml

from envs.modes import ObsMode

POLICY_OBS_MODES = (ObsMode.STATE, ObsMode.STATE_DICT, ObsMode.RGB, ObsMode.RGBD)


def check(cond: bool, message: str) -> None:
    if not cond:
        raise ValueError(message)


def read_yaml(path: Path) -> Any:
    """A YAML file's contents (None when empty); a file that is not valid YAML or not text is
    one ValueError naming the file and, where YAML knows it, the line and column."""
    try:
        return yaml.safe_load(path.read_text())
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{path}: not valid YAML{where}: {problem}") from None


def positive(obj: Any, *names: str) -> None:
    for name in names:
        check(getattr(obj, name) > 0, f"{name} must be > 0, got {getattr(obj, name)}")


IMAGE_ENCODERS = ("cnn", "resnet18")  # policies/models/encoders.py builds them

# the inputs policies/data.py derives from an observation (its DERIVED computes them)
DERIVED_INPUTS = ("tcp_to_goal_pos", "tcp_to_push_pos")


@dataclass
class DatasetConfig:
    obs_mode: str = "state"
    """observations to learn from: state (the flat vector), state_dict (its entries named by
    state_keys), rgb or rgbd (cameras + state_keys)"""
    max_episodes: int = 0
    """use the file's first N episodes (0: all)"""
    val_fraction: float = 0.1
    """fraction of episodes held out for the validation loss (episode-level split)"""
    split_seed: int = 0
    """seed of the train/val episode split"""
    state_keys: tuple[str, ...] = ("agent", "extra/tcp_pose", "extra/goal_pos")
    """state_dict and image modes: obs entries fed to the policy (a path names all leaves under it, e.g.
    agent, extra/tcp_to_obj_pos); paths missing from the data are left out"""
    derived: tuple[str, ...] = ()
    """inputs computed from the observation and appended to the state (policies/data.py DERIVED:
    tcp_to_goal_pos, the goal minus the TCP; tcp_to_push_pos, PushCube's push point minus the TCP);
    state_dict and image modes"""
    aux_keys: tuple[str, ...] = ()
    """image modes: obs entries recorded in the demos (e.g. extra/tcp_to_obj_pos) that the image
    features learn to predict during training, an auxiliary loss weighted by policy.aux_weight;
    never a policy input, so acting needs only the cameras and state_keys"""
    cameras: tuple[str, ...] = ()
    """image modes: camera uids to use (empty: every camera in the data)"""
    depth_scale_mm: float = 2000.0
    """rgbd: depth in millimetres is divided by this (and clipped to 1)"""

    def __post_init__(self) -> None:
        allowed = ", ".join(m.value for m in POLICY_OBS_MODES)
        check(self.obs_mode in {m.value for m in POLICY_OBS_MODES}, f"dataset.obs_mode {self.obs_mode!r}; allowed: {allowed}")
        check(0.0 <= self.val_fraction < 1.0, f"dataset.val_fraction must be in [0, 1), got {self.val_fraction}")
        check(self.max_episodes >= 0, f"dataset.max_episodes must be >= 0, got {self.max_episodes}")
        positive(self, "depth_scale_mm")
        unknown = [d for d in self.derived if d not in DERIVED_INPUTS]
        check(not unknown, f"dataset.derived {unknown}; allowed: {', '.join(DERIVED_INPUTS)}")

    @property
    def mode(self) -> ObsMode:
        return ObsMode(self.obs_mode)


@dataclass
class PolicyConfig:
    """What every policy shares: horizons, the image encoder, the optimiser."""

    obs_horizon: int = 2
    """observations stacked as the policy's input (the current one and those before it)"""
    pred_horizon: int = 16
    """actions predicted at once (starting at the oldest observation of the history)"""
    action_horizon: int = 8
    """actions of a prediction executed before predicting again"""
    image_features: int = 256
    """image modes: features per camera from the CNN encoder"""
    image_shift: int = 4
    """image modes: random-shift augmentation in pixels during training (0: none)"""
    image_crop: float = 0.0
    """image modes: share of each image side cut away, a random window in training and the centre
    one when acting (random-crop augmentation as in Diffusion Policy, e.g. 0.1; 0: none)"""
    image_encoder: str = "cnn"
    """image modes: per-camera encoder; cnn (five small convolutions) or resnet18 (ResNet-18 with
    GroupNorm, trained from scratch), each ending in a spatial soft-argmax"""
    image_keypoints: int = 64
    """image modes: soft-argmax keypoints per camera (features before the projection to image_features)"""
    state_noise: float = 0.0
    """std of Gaussian noise added to the normalised state inputs during training (0: none):
    augmentation against memorising a few demos"""
    lr: float = 1e-3
    """peak learning rate (AdamW; linear warm-up, then cosine decay to 0 at train.max_steps)"""
    weight_decay: float = 1e-6
    """AdamW weight decay"""
    warmup_steps: int = 500
    """learning-rate warm-up steps"""
    aux_weight: float = 1.0
    """weight of the auxiliary loss on dataset.aux_keys (image modes)"""

    def __post_init__(self) -> None:
        check(self.aux_weight >= 0, f"policy.aux_weight must be >= 0, got {self.aux_weight}")
        positive(self, "obs_horizon", "pred_horizon", "action_horizon", "image_features", "lr")
        check(self.image_shift >= 0, f"policy.image_shift must be >= 0, got {self.image_shift}")
        check(0.0 <= self.image_crop < 0.5, f"policy.image_crop must be in [0, 0.5), got {self.image_crop}")
        check(self.image_encoder in IMAGE_ENCODERS,
              f"policy.image_encoder {self.image_encoder!r}; allowed: {', '.join(IMAGE_ENCODERS)}")
        positive(self, "image_keypoints")
        check(self.state_noise >= 0, f"policy.state_noise must be >= 0, got {self.state_noise}")
        check(self.warmup_steps >= 0, f"policy.warmup_steps must be >= 0, got {self.warmup_steps}")
        check(
            self.action_horizon <= self.pred_horizon - self.obs_horizon + 1,
            f"policy.action_horizon ({self.action_horizon}) must be <= pred_horizon - obs_horizon + 1 "
            f"({self.pred_horizon - self.obs_horizon + 1}): the executed actions start at the current step",
        )


@dataclass
class TrainConfig:
    max_steps: int = 30_000
    """optimiser steps"""
    max_minutes: float = 0.0
    """stop after this many minutes of training even before max_steps (0: no limit)"""
    batch_size: int = 256
    """samples per step and device"""
    val_every: int = 2000
    """steps between validation (loss on held-out episodes, then evaluation rollouts)"""
    val_batches: int = 8
    """validation batches per validation"""
    precision: str = "auto"
    """Lightning precision: auto (bf16-mixed on CUDA, 32-true on CPU), 32-true, bf16-mixed, 16-mixed"""
    accelerator: str = "auto"
    """Lightning accelerator: auto, cpu, gpu"""
    devices: Annotated[int, tyro.conf.arg(aliases=("--devices",))] = 1
    """devices (GPUs, or CPU processes with accelerator cpu)"""
    strategy: Annotated[str, tyro.conf.arg(aliases=("--strategy",))] = "auto"
    """Lightning strategy: auto, ddp, ddp_spawn, ..."""
    num_nodes: Annotated[int, tyro.conf.arg(aliases=("--num-nodes",))] = 1
    """machines training together (Lightning's multi-node DDP: run the same command on every node, with
    MASTER_ADDR, MASTER_PORT, NODE_RANK set, or under SLURM or torchrun)"""
    seed: int = 0
    """seed of weights, sampling and noise"""
    out: str = "runs"
    """folder of runs; this run writes OUT/NAME"""
    name: str = ""
    """run name (default: <policy>_<obs mode>_<env id>)"""
    resume: Annotated[bool, tyro.conf.arg(aliases=("--resume",))] = False
    """continue OUT/NAME from its last checkpoint"""
    progress_bar: bool = True
    """show a progress bar"""

    def __post_init__(self) -> None:
        positive(self, "max_steps", "batch_size", "val_every", "val_batches", "devices", "num_nodes")
        check(self.max_minutes >= 0, f"train.max_minutes must be >= 0, got {self.max_minutes}")
        precisions = ("auto", "32-true", "bf16-mixed", "16-mixed", "64-true")
        check(self.precision in precisions, f"train.precision {self.precision!r}; allowed: {', '.join(precisions)}")


@dataclass
class Rollouts:
    """Evaluation episodes in the batched simulator: what `policies eval` takes as flags and a
    training run as its `eval` section (each with its own defaults)."""

    episodes: int = 50
    """evaluation episodes (seeds seed, seed + 1, ...)"""
    num_envs: int = 25
    """envs simulated together"""
    seed: int = 100_000
    """first evaluation seed (far from the demos' seeds)"""
    max_episode_steps: int = 0
    """episode length (0: the one the policy was trained for)"""
    video: str = ""
    """folder for tiled mp4 videos of the rollouts (empty: none)"""

    def __post_init__(self) -> None:
        positive(self, "num_envs")
        check(self.episodes >= 0, f"episodes must be >= 0, got {self.episodes}")
        check(self.max_episode_steps >= 0, f"max_episode_steps must be >= 0, got {self.max_episode_steps}")


@dataclass
class EvalConfig(Rollouts):
    """Rollouts every train.val_every steps (episodes 0: none) and of the best checkpoint after training."""

    num_workers: int = 1
    """env worker processes (envs.parallel)"""
    final_episodes: int = 100
    """episodes of the evaluation of the best checkpoint after training (0: none)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive(self, "num_workers")
        check(self.final_episodes >= 0, f"eval.final_episodes must be >= 0, got {self.final_episodes}")
        check(self.num_workers <= self.num_envs, "eval.num_workers must be <= eval.num_envs")


@dataclass
class RunConfig:
    data: str = ""
    """demonstrations: a trajectory file (.h5 with its .json sidecar)"""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    kind: typing.ClassVar[str]
    """the policy kind's name (`policies train KIND`, stored in checkpoints)"""

    def __post_init__(self) -> None:
        check(bool(self.data), "--data FILE.h5 is required")
        check(Path(self.data).is_file(), f"--data {self.data}: no such file")
        check(self.dataset.val_fraction > 0 or self.eval.episodes > 0,
              "dataset.val_fraction 0 leaves no validation loss to choose the best checkpoint by: keep eval.episodes > 0")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}


def _coerce(tp: Any, value: Any, where: str) -> Any:
    """`value` (from YAML/JSON) as type `tp`, or a ValueError naming the key."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    if origin is tuple:
        check(isinstance(value, (list, tuple)), f"{where}: expected a list, got {value!r}")
        (inner, *_) = typing.get_args(tp)
        return tuple(_coerce(inner, v, where) for v in value)
    if origin in (typing.Union, types.UnionType):
        return value
    if origin is Literal:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in (int, float, str, bool):
        check(isinstance(value, tp) and not (tp is int and isinstance(value, bool)), f"{where}: expected {tp.__name__}, got {value!r}")
    return value


def from_dict(cls: type, data: Any, where: str = "") -> Any:
    """A dataclass from a nested dict; unknown keys and wrong types raise one ValueError."""
    check(isinstance(data, dict), f"{where or 'config'}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValueError(f"unknown key {where + '.' if where else ''}{unknown[0]}; allowed: {', '.join(sorted(fields))}")
    kwargs = {k: _coerce(hints[k], v, f"{where + '.' if where else ''}{k}") for k, v in data.items()}
    return cls(**kwargs)


def merge_sections(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid over `base`, mappings merged key by key (a recipe's run settings over a config file)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge_sections(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def from_dict_lenient_data(cls: type[RunConfig], raw: dict[str, Any]) -> RunConfig:
    """`from_dict` for a run whose `data` may still be missing (the command line supplies it)."""
    data = raw.pop("data", "")
    run = object.__new__(cls)
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]}; allowed: {', '.join(sorted(fields))}")
    for f in dataclasses.fields(cls):
        if f.name == "data":
            continue
        value = _coerce(hints[f.name], raw[f.name], f.name) if f.name in raw else f.default_factory()
        setattr(run, f.name, value)
    run.data = data
    return run
