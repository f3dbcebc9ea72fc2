"""Several processes: ``accelerate launch`` with ``configs/accelerate/ddp.yaml`` runs ``actune train`` in 2 CPU
processes (torch.distributed over gloo); both train and enter ``save_model``, one writes the adapter, swaps
the output folder and deletes the checkpoints, and the progress lines are said once. The FSDP and ZeRO-3
files are checked as accelerate reads them (they need GPUs to run)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from training_records import ADAPTER_FILES, base_plus_adapter, write_store

from actune.bootstrap.export import export_dataset

REPO = Path(__file__).resolve().parents[2]
ACCELERATE_CONFIGS = REPO / "configs" / "accelerate"

# Runs actune's own command in each process, recording (by rank) every call that saves or swaps a folder.
RECORDING_MAIN = """
import json, os, sys
from pathlib import Path

from transformers import Trainer

from actune.cli import main
from actune.train import saving as run  # replace_folder: the save path's

log = Path(os.environ["EVENTS_DIR"]) / f"rank{os.environ['RANK']}.jsonl"


def record(op, path):
    with log.open("a") as f:
        f.write(json.dumps({"op": op, "path": str(path)}) + "\\n")


def spy(op, real, at):
    def call(*args, **kwargs):
        record(op, args[at] if len(args) > at else kwargs.get("output_dir"))
        return real(*args, **kwargs)
    return call


Trainer.save_model = spy("save_model", Trainer.save_model, 1)
Trainer._save = spy("write", Trainer._save, 1)
run.replace_folder = spy("replace_folder", run.replace_folder, 1)
sys.exit(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_accelerate_configs_are_one_node_and_leave_the_precision_to_train_dtype():
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DistributedType

    configs = {p.stem: load_config_from_file(str(p)) for p in sorted(ACCELERATE_CONFIGS.glob("*.yaml"))}
    assert {name: c.distributed_type for name, c in configs.items()} == {
        "ddp": DistributedType.MULTI_GPU, "fsdp": DistributedType.FSDP, "zero3": DistributedType.DEEPSPEED}
    for c in configs.values():
        assert (c.num_machines, c.num_processes, c.mixed_precision, c.use_cpu) == (1, 8, "no", False)
    # the settings under which save_model writes one whole adapter file
    assert configs["fsdp"].fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"
    assert configs["zero3"].deepspeed_config["zero_stage"] == 3
    assert configs["zero3"].deepspeed_config["zero3_save_16bit_model"] is True


def test_two_processes_train_and_one_writes_the_adapter_once(tmp_path, embedded_model):
    from safetensors.torch import load_file

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    (tmp_path / "run.yaml").write_text(
        f"train:\n  base_model: {embedded_model}\n  dataset: {tmp_path / 'ds'}\n  output_dir: {tmp_path / 'adapter'}\n"
        "  lora: {r: 4, alpha: 8, dropout: 0.0}\n  learning_rate: 0.005\n  warmup_ratio: 0.0\n  max_steps: 2\n"
        "  per_device_train_batch_size: 1\n  max_length: 128\n  dtype: float32\n")
    (tmp_path / "main.py").write_text(RECORDING_MAIN)
    events = tmp_path / "events"
    events.mkdir()
    # one thread a process: two processes on two cores
    env = {**os.environ, "EVENTS_DIR": str(events), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ACCELERATE_CONFIGS / "ddp.yaml"),
           "--num_processes", "2", "--main_process_port", str(free_port()),
           str(tmp_path / "main.py"), "train", str(tmp_path / "run.yaml")]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]

    out, ckpts = tmp_path / "adapter", tmp_path / "adapter.checkpoints"
    calls = {int(p.stem.removeprefix("rank")): [json.loads(line) for line in p.read_text().splitlines()]
             for p in sorted(events.glob("rank*.jsonl"))}
    final = str(ckpts / "final")
    assert sorted(calls) == [0, 1]
    # both processes enter save_model (under FSDP and ZeRO-3 it gathers from all of them) ...
    assert [c["path"] for c in calls[1] if c["op"] == "save_model"][-1] == final
    assert [c["path"] for c in calls[0] if c["op"] == "save_model"][-1] == final
    # ... and only the main one writes, checkpoints included, and swaps the output folder, once
    assert [c for c in calls[1] if c["op"] != "save_model"] == []
    assert [c for c in calls[0] if c["path"] == final or c["op"] == "replace_folder"] == [
        {"op": "save_model", "path": final}, {"op": "write", "path": final},
        {"op": "replace_folder", "path": str(out)}]

    meta = json.loads((out / "training_meta.json").read_text())
    assert (meta["processes"], meta["steps"]) == (2, 2)
    assert sorted(p.name for p in out.iterdir()) == ADAPTER_FILES
    # no checkpoints, no half-swapped or temporary folder left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "ds", "events", "main.py", "run.yaml",
                                                         "store.jsonl"]
    # the progress lines come from one process
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("train: adapter saved to ") for line in lines) == 1
    assert sum(line.startswith("train: dtype float32 (float32); ") and line.endswith("; 2 processes")
               for line in lines) == 1

    weights = load_file(str(out / "adapter_model.safetensors"))
    assert any(float(v.abs().max()) > 0 for k, v in weights.items() if "lora_B" in k)  # it learned
    model = base_plus_adapter(embedded_model, out)
    assert model.peft_config["default"].r == 4
