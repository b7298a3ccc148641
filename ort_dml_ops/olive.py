"""An Olive pass (`pip install 'ort-dml-ops[olive]'`): `OrtDmlOpsConvert` runs `convert` on an
ONNX model inside an Olive workflow, beside Olive's own passes.

Olive (0.13) finds a pass type through its package config (olive/package_config.py:
`OlivePackageConfig.import_pass_module` imports the `module_path` its `passes` table gives), and
takes another package config with `olive run --package-config FILE` or
`olive.workflows.run(config, package_config=...)`. `package_config()` is Olive's own table
plus this pass, so every built-in pass stays available:

    python -m ort_dml_ops.olive olive_package.json        # writes that table
    olive run --config workflow.json --package-config olive_package.json

The pass follows Olive's own onnx-ir passes (olive/passes/onnx/onnxscript_fusion.py): load the
ir.Model, run `ort_dml_ops.passes.ConvertPass` in place, save with Olive's external-data
options. With `tune: true` it runs `ort_dml_ops.tuning.tune` instead: every CumSum / CumProd /
Scatter node gets the option measured fastest on `tune_provider` (default: the target's EP)
with the first item the pass's `data_config` yields as the model's inputs (as Olive's
quantization passes take their calibration data; give `"dataloader_config": {"batch_size":
null}` when the dataset's items are already whole inputs). See docs/integrations.md and
docs/tune.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from olive.common.config_utils import validate_config
from olive.data.config import DataConfig
from olive.hardware.accelerator import AcceleratorSpec
from olive.model import ONNXModelHandler
from olive.model.utils import resolve_onnx_path
from olive.passes import Pass
from olive.passes.onnx.common import (
    get_external_data_config,
    ir_model_to_olive_model,
    model_proto_to_olive_model,
)
from olive.passes.pass_config import BasePassConfig, PassConfigParam

from .converter.pipeline import STRATEGIES, TARGETS
from .passes import ConvertPass

PASS_TYPE = "OrtDmlOpsConvert"


class OrtDmlOpsConvert(Pass):
    """Rewrite CumSum / CumProd / scatter nodes so they run on the target EP (ort_dml_ops.convert)."""

    @classmethod
    def _default_config(
        cls, accelerator_spec: AcceleratorSpec
    ) -> dict[str, PassConfigParam]:
        return {
            "target": PassConfigParam(
                type_=str,
                default_value="dml",
                description=f"one of {', '.join(TARGETS)}",
            ),
            "strategy": PassConfigParam(
                type_=str,
                default_value="auto",
                description=f"one of {', '.join(STRATEGIES)}",
            ),
            "check_indices": PassConfigParam(
                type_=bool,
                default_value=True,
                description="lowered scatters check their indices at run time",
            ),
            "tune": PassConfigParam(
                type_=bool,
                default_value=False,
                description="measure every option of every node on tune_provider with the "
                "data_config's first inputs and keep the fastest (ort_dml_ops.tuning.tune)",
            ),
            "tune_provider": PassConfigParam(
                type_=str,
                default_value=None,
                description="dml, webgpu, cuda or cpu: where tune measures (default: the target)",
            ),
            "tune_repeats": PassConfigParam(
                type_=int,
                default_value=15,
                description="interleaved rounds per measurement",
            ),
            "tune_inputs_on": PassConfigParam(
                type_=str,
                default_value="device",
                description="device or host: where the timed nodes' inputs live",
            ),
            "data_config": PassConfigParam(
                type_=DataConfig | dict,
                default_value=None,
                description="the inputs tune measures with (its first item); needed by tune",
            ),
            **get_external_data_config(),
        }

    def _run_for_config(
        self,
        model: ONNXModelHandler,
        config: type[BasePassConfig],
        output_model_path: str,
    ) -> ONNXModelHandler:
        output_model_path = resolve_onnx_path(
            output_model_path, Path(model.model_path).name
        )
        if config.tune:
            return self._tune(model, config, output_model_path)
        model_ir = model.load_ir_model()
        ConvertPass(
            target=config.target,
            strategy=config.strategy,
            check_indices=config.check_indices,
        )(model_ir)
        return ir_model_to_olive_model(model_ir, output_model_path, config)

    def _tune(
        self, model: ONNXModelHandler, config, output_model_path: str
    ) -> ONNXModelHandler:
        from .tuning import tune

        if config.data_config is None:
            raise ValueError(
                f"{PASS_TYPE}: tune needs a data_config (the inputs to measure with)"
            )
        data = validate_config(config.data_config, DataConfig)
        batch = next(iter(data.to_data_container().create_dataloader()))
        inputs = batch[0] if isinstance(batch, (tuple, list)) else batch
        if not isinstance(inputs, dict):
            raise ValueError(
                f"{PASS_TYPE}: tune needs the data_config's items as {{input name: value}}"
            )
        feeds = {k: _to_numpy(v) for k, v in inputs.items()}
        result = tune(
            model.load_model(),
            feeds,
            provider=config.tune_provider or config.target,
            repeats=config.tune_repeats,
            inputs_on=config.tune_inputs_on,
        )
        return model_proto_to_olive_model(result.model, output_model_path, config)


def _to_numpy(value) -> np.ndarray:
    """A torch tensor or an array-like as a numpy array."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def package_config() -> dict:
    """Olive's default package config with `OrtDmlOpsConvert` added (for `--package-config`)."""
    from olive.package_config import OlivePackageConfig

    table = json.loads(Path(OlivePackageConfig.get_default_config_path()).read_text())
    table["passes"][PASS_TYPE] = {
        "module_path": f"ort_dml_ops.olive.{PASS_TYPE}",  # not __name__: __main__ under -m
        "supported_providers": ["*"],
        "supported_accelerators": ["*"],
        "supported_precisions": ["*"],
        "supported_algorithms": [],
        "supported_quantization_encodings": [],
    }
    return table


def main(argv: list[str] | None = None) -> int:
    """`python -m ort_dml_ops.olive FILE`: write package_config() to FILE (atomically; never over an existing file)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m ort_dml_ops.olive PACKAGE_CONFIG.json", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if path.exists():
        print(f"error: {path} exists; name a new file", file=sys.stderr)
        return 1
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(package_config(), indent=1))
        tmp.rename(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        print(f"error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
