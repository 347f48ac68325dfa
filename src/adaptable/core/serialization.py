"""Save / load a fitted AdapTable as one ``.safetensors`` file: tensors plus JSON metadata.

Nothing is pickled: the calibrator's weights, the source statistics and priors are tensors; the
Encoder, column layout, hyperparameters and package version are JSON in the file's metadata.
Loading checks every field and tensor and refuses, naming the field, anything missing,
malformed, or in disagreement with the rest of the file: a file edited by hand or truncated
must fail loudly, never give different predictions.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from adaptable.core.adaptable import (
    CALIBRATORS,
    ColumnLayout,
    GraphCalibrator,
    ShiftAwareCalibrator,
    SourceStatistics,
    check_distribution,
    imbalance_temperature,
)
from adaptable.core.decision import RuleChoice
from adaptable.core.label_shift import LabelShiftTest, OnlinePriorEstimate, prior_center
from adaptable.core.model_adapter import as_logit_function

if TYPE_CHECKING:
    from adaptable.core.adaptable import AdapTable

FORMAT = "adaptable.AdapTable/2"
#: files written before the presets existed hold the paper's algorithm
OLDER_FORMATS = ("adaptable.AdapTable/1",)
_METADATA_KEY = "adaptable"
#: parameters that are not saved (a callable)
_UNSAVED_PARAMS = ("progress",)


def save(method: AdapTable, path: str | os.PathLike[str]) -> None:
    """Write ``method`` (fitted) to ``path``; see :meth:`AdapTable.save`."""
    from safetensors.numpy import save_file

    from adaptable import __version__

    arrays: dict[str, np.ndarray] = {"source_prior": method.source_prior_}
    if method.preset == "paper":
        arrays["online_prior"] = method._online.value
    for key, value in method._calibrator.arrays().items():
        arrays[f"calibrator.{key}"] = value
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": __version__,
        "params": _saved_params(method),
        "n_classes": method.n_classes_,
        "temperature": method.temperature_,
        "calibrator": method._calibrator.name,
    }
    if method.preset == "default":
        for key, value in method.shift_test_.arrays().items():
            arrays[f"shift_test.{key}"] = value
        for key, value in method._prior_estimate.arrays().items():
            arrays[f"prior_estimate.{key}"] = value
        arrays["expected_confusion"] = method._expected
        rule = method.rule_
        meta["rule"] = {
            "beta": rule.beta,
            "source_score": rule.source_score,
            "balanced_score": rule.balanced_score,
            "evidence": rule.evidence,
        }
        meta["seed"] = method._prior_estimate.seed
        meta["encoder"] = method.encoder_.to_dict()
    # Labels other than the column indices 0..C-1 (e.g. 'no' / 'yes') are saved with the file.
    if not np.array_equal(method.classes_, np.arange(method.n_classes_)):
        meta["classes"] = method.classes_.tolist()
    if method.layout_ is not None:
        arrays["numeric_mean"] = method.source_statistics_.numeric_mean
        arrays["category_mean"] = method.source_statistics_.category_mean
        meta["encoder"] = method.encoder_.to_dict()
        meta["layout"] = method.layout_.to_dict()
    # safetensors refuses empty or non-contiguous arrays; load knows the empty ones' shapes
    tensors = {k: np.ascontiguousarray(v) for k, v in arrays.items() if np.asarray(v).size}
    save_file(tensors, os.fspath(path), metadata={_METADATA_KEY: json.dumps(meta)})


def _saved_params(method: AdapTable) -> dict[str, Any]:
    """Constructor arguments in constructor order, JSON-compatible."""
    import inspect

    order = [p for p in inspect.signature(type(method).__init__).parameters if p != "self"]
    params = method.get_params(deep=False)
    saved = {k: params[k] for k in order if k not in _UNSAVED_PARAMS}
    for key in ("numerical", "categorical"):
        if saved[key] is not None:
            saved[key] = list(saved[key])
    return saved


def load(
    cls: type[AdapTable], path: str | os.PathLike[str], model: Any = None, output: str | None = None
) -> AdapTable:
    """Rebuild an AdapTable written by :func:`save`, checking every field (see AdapTable.load)."""
    from safetensors import safe_open

    name = os.fspath(path)
    with safe_open(name, framework="numpy") as handle:
        raw = (handle.metadata() or {}).get(_METADATA_KEY)
        if raw is None:
            raise ValueError(f"{name!r} is not a file written by AdapTable.save.")
        arrays = {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118
    reader = _Reader(name, raw, arrays)
    params = reader.params(cls)
    if output is not None:
        params["output"] = output
    method = cls(**params)
    n_classes = reader.integer("n_classes", minimum=2)
    classes = reader.classes(n_classes)
    prior = reader.distribution("source_prior", n_classes, positive=True)
    calibrator_name = reader.field("calibrator", str)
    if calibrator_name != method.calibrator_name_:
        raise reader.error(
            "calibrator", f"is {calibrator_name!r} but params say {method.calibrator_name_!r}"
        )
    paper = params["preset"] == "paper"
    temperature = reader.temperature(prior, params) if paper else reader.no_temperature()
    online = (
        reader.distribution("online_prior", n_classes, positive=False)
        if paper
        else np.full(n_classes, 1.0 / n_classes)
    )
    encoder = layout = statistics = None
    if not paper:
        encoder = reader.encoder()
    if calibrator_name == GraphCalibrator.name:
        encoder, layout, statistics = reader.shift_trend_state()
        net = ShiftAwareCalibrator.for_layout(
            layout,
            statistics,
            n_classes,
            width=params["batch_size"],
            hidden=params["hidden"],
            adjacency=params["adjacency"],
        )
        net.load_state_dict(reader.network_state(net))
        calibrator: Any = GraphCalibrator(net)
    else:
        try:
            calibrator = CALIBRATORS[calibrator_name].from_arrays(
                reader.calibrator_arrays(), n_classes
            )
        except ValueError as err:
            raise reader.error("calibrator", str(err)) from err
    recommended: dict[str, Any] = {}
    if not paper:
        recommended = reader.recommended_state(prior, n_classes, params)
    reader.no_unexpected_tensors()
    method._restore(
        logit_function=None if model is None else as_logit_function(model, params["output"]),
        model=model,
        classes=classes,
        prior=prior,
        temperature=temperature,
        online=online,
        calibrator=calibrator,
        encoder=encoder,
        layout=layout,
        statistics=statistics,
        **recommended,
    )
    return method


class _Reader:
    """Checked access to one file's metadata and tensors; every error names the field."""

    def __init__(self, path: str, raw: str, arrays: dict[str, np.ndarray]) -> None:
        self.path = path
        self.arrays = arrays
        self.used: set[str] = set()
        try:
            self.meta = json.loads(raw)
        except json.JSONDecodeError as err:
            raise self.error("metadata", f"is not valid JSON ({err})") from err
        if not isinstance(self.meta, dict) or self.meta.get("format") not in (
            FORMAT,
            *OLDER_FORMATS,
        ):
            found = self.meta.get("format") if isinstance(self.meta, dict) else None
            raise ValueError(
                f"{path!r}: unknown AdapTable file format {found!r}; expected {FORMAT!r}."
            )

    def error(self, field: str, problem: str) -> ValueError:
        return ValueError(
            f"{self.path!r}: field {field!r} {problem}; the file is damaged or edited."
        )

    def field(self, key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in self.meta:
            raise self.error(key, "is missing")
        value = self.meta[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.error(key, f"must be a {getattr(kind, '__name__', kind)}; got {value!r}")
        return value

    def integer(self, key: str, minimum: int) -> int:
        value = self.field(key, int)
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}; got {value}")
        return value

    def params(self, cls: type[AdapTable]) -> dict[str, Any]:
        params = dict(self.field("params", dict))
        if self.meta["format"] in OLDER_FORMATS:
            # Written before the presets: the paper's algorithm (whose calibrator default was gnn).
            params.setdefault("preset", "paper")
        if "preset" not in params:
            raise self.error("params", "name no preset")
        # Written before the likelihood-ratio test: its decisions were made without it.
        params.setdefault("label_shift_level", 1.0)
        # Written before covariate_rule_evidence: one evidence threshold decided everywhere.
        params.setdefault("covariate_rule_evidence", params.get("rule_evidence", 0.8))
        # Written before stream_check: the stream confirmed the balanced rule by one reading.
        params.setdefault("stream_check", "model")
        # Parameters added since the file was written take their defaults; unknown ones refuse.
        try:
            cls(**params)
        except (TypeError, ValueError) as err:
            raise self.error("params", f"are not valid AdapTable parameters ({err})") from err
        return params

    def classes(self, n_classes: int) -> np.ndarray:
        if "classes" not in self.meta:
            return np.arange(n_classes)
        classes = np.asarray(self.field("classes", list))
        if (
            classes.shape != (n_classes,)
            or len(np.unique(classes)) != n_classes
            or not np.array_equal(np.sort(classes), classes)
        ):
            raise self.error(
                "classes", f"must be {n_classes} distinct sorted labels; got {classes.tolist()}"
            )
        return classes

    def tensor(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        """A finite tensor of ``shape``; an empty one may be absent (safetensors drops those)."""
        self.used.add(key)
        if key not in self.arrays:
            if int(np.prod(shape)) == 0:
                return np.zeros(shape)
            raise self.error(key, "is missing")
        value = np.asarray(self.arrays[key])
        if value.shape != shape:
            raise self.error(key, f"must have shape {shape}; got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise self.error(key, "holds NaN or inf values")
        return value

    def distribution(self, key: str, n_classes: int, positive: bool) -> np.ndarray:
        value = self.tensor(key, (n_classes,)).astype(np.float64)
        try:
            check_distribution(value, n_classes, key)
        except ValueError as err:
            raise self.error(key, f"is not a probability vector ({err})") from err
        if positive and value.min() <= 0:
            raise self.error(key, f"must be positive for every class; got {value.tolist()}")
        return value

    def temperature(self, prior: np.ndarray, params: dict[str, Any]) -> float:
        value = self.field("temperature", (int, float))
        if not np.isfinite(value) or value <= 0:
            raise self.error("temperature", f"must be a positive number; got {value!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = imbalance_temperature(
                prior, params["temperature"], params["max_temperature"]
            )
        if not np.isclose(value, expected, rtol=1e-9, atol=0.0):
            raise self.error(
                "temperature",
                f"is {value!r} but the source prior and params give {expected!r}",
            )
        return float(value)

    def no_temperature(self) -> None:
        if self.meta.get("temperature") is not None:
            raise self.error("temperature", "must be null for the default preset")
        return None

    def encoder(self) -> Any:
        from adaptable.encoding import Encoder

        try:
            return Encoder.from_dict(self.field("encoder", dict))
        except (KeyError, TypeError, ValueError) as err:
            raise self.error("encoder", f"cannot be read ({err})") from err

    def prefixed(self, prefix: str) -> dict[str, np.ndarray]:
        out = {}
        for key, value in self.arrays.items():
            if key.startswith(prefix):
                self.used.add(key)
                out[key.removeprefix(prefix)] = value
        return out

    def recommended_state(
        self, prior: np.ndarray, n_classes: int, params: dict[str, Any]
    ) -> dict[str, Any]:
        """The default preset's rule, label-shift test and target-prior estimate."""
        rule = self.field("rule", dict)
        try:
            choice = RuleChoice(
                float(rule["beta"]),
                float(rule["source_score"]),
                float(rule["balanced_score"]),
                float(rule["evidence"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise self.error("rule", f"cannot be read ({err})") from err
        if choice.beta not in (0.0, 1.0) or not 0.0 <= choice.evidence <= 1.0:
            raise self.error("rule", f"must have beta 0 or 1 and evidence in [0, 1]; got {rule}")
        try:
            test = LabelShiftTest.from_arrays(self.prefixed("shift_test."), n_classes)
        except (ValueError, KeyError) as err:
            raise self.error("shift_test", str(err)) from err
        seed = self.field("seed", int)
        estimate = OnlinePriorEstimate(
            prior,
            strength=params["prior_strength"],
            seed=seed,
            center=prior_center(params["objective"]),
        )
        state = self.prefixed("prior_estimate.")
        # Before the first batch the reservoir is empty, and safetensors does not write it.
        state.setdefault("reservoir", np.zeros((0, n_classes)))
        try:
            estimate.restore(state)
        except (ValueError, KeyError) as err:
            raise self.error("prior_estimate", str(err)) from err
        expected = self.tensor("expected_confusion", (2, n_classes, n_classes))
        if np.any(expected < 0):
            raise self.error("expected_confusion", "holds negative counts")
        return {
            "rule": choice,
            "shift_test": test,
            "prior_estimate": estimate,
            "expected": expected.astype(np.float64),
        }

    def shift_trend_state(self) -> tuple[Any, ColumnLayout, SourceStatistics]:
        encoder = self.encoder()
        try:
            layout = ColumnLayout.from_dict(self.field("layout", dict))
        except (KeyError, TypeError, ValueError) as err:
            raise self.error("layout", f"cannot be read ({err})") from err
        if layout.to_dict() != ColumnLayout.from_encoder(encoder).to_dict():
            raise self.error("layout", "disagrees with the encoder's schema")
        statistics = SourceStatistics(
            self.tensor("numeric_mean", (layout.n_numeric,)).astype(np.float64),
            self.tensor("category_mean", (layout.categorical_width,)).astype(np.float64),
        )
        return encoder, layout, statistics

    def network_state(self, net: ShiftAwareCalibrator) -> dict[str, torch.Tensor]:
        state = net.state_dict()
        for key, expected in state.items():
            value = self.tensor(f"calibrator.{key}", tuple(expected.shape))
            if key in ("block_of_column", "code_of_column", "category_mean") and not np.array_equal(
                value, expected.numpy()
            ):
                # Derived from the layout and the source statistics: must agree with them.
                raise self.error(f"calibrator.{key}", "disagrees with the layout or statistics")
            state[key] = torch.from_numpy(np.array(value)).to(expected.dtype)
        return state

    def calibrator_arrays(self) -> dict[str, np.ndarray]:
        out = {}
        for key, value in self.arrays.items():
            if key.startswith("calibrator."):
                self.used.add(key)
                out[key.removeprefix("calibrator.")] = value
        return out

    def no_unexpected_tensors(self) -> None:
        extra = sorted(set(self.arrays) - self.used)
        if extra:
            raise self.error(extra[0], "is not part of an AdapTable file")
