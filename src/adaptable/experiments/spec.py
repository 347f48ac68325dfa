"""The experiment key: (dataset, scenario, model, method, seed) plus the method's options, and
where they differ from the defaults the source model's training recipe and the shift's options.

>>> spec = ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"calibrator": "none"})
>>> spec.key
'heloc|natural|mlp|adaptable|seed=0|{"calibrator":"none"}'
>>> ExperimentSpec("heloc", "natural", "mlp", "adaptable", 0, {"preset": "default"}).key
'heloc|natural|mlp|adaptable|seed=0'
>>> ExperimentSpec("heloc", "class_imbalance", "mlp", "source", 0, recipe="authors",
...                shift_options={"convention": "authors_code"}).key
'heloc|class_imbalance|mlp|source|seed=0|recipe=authors|shift={"convention":"authors_code"}'
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the batch size of every experiment in the paper
BATCH_SIZE = 64
#: the source-training recipe (``adaptable.models.train(recipe=...)``) of a spec that names none;
#: a spec with this recipe keeps the key it had before recipes were part of the spec
DEFAULT_RECIPE = "default"


def _canonical_options(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    if options is None:
        return ()
    if not isinstance(options, Mapping):
        raise TypeError(f"method options must be a mapping of name -> value; got {options!r}")
    for name, value in options.items():
        if not isinstance(name, str):
            raise TypeError(f"option names must be strings; got {name!r}")
        try:
            json.dumps(value)
        except TypeError as err:
            raise TypeError(
                f"option {name}={value!r} is not JSON-serialisable; options are part of the "
                "results key and must be plain numbers, strings, booleans or lists of them"
            ) from err
    return tuple(sorted((k, _freeze(v)) for k, v in options.items()))


#: options never dropped at their default value: the runner seeds a method whose options leave
#: ``random_state`` out, so ``random_state=null`` given on purpose is another experiment
_KEPT_AT_DEFAULT = frozenset({"random_state"})


@functools.cache
def method_defaults(method: str) -> Mapping[str, Any]:
    """The constructor defaults of the registered method ``method`` (``adaptable.methods``),
    as option values (lists as tuples); empty for a name the registry lacks (a test's toy
    method) and for a method whose constructor takes ``**kwargs`` alone.

    >>> method_defaults("adaptable")["preset"]
    'default'
    >>> dict(method_defaults("no_such_method"))
    {}
    """
    try:
        from adaptable.methods import method_class

        cls = method_class(method)
    except (ImportError, ValueError):
        return {}
    defaults: dict[str, Any] = {}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if parameter.default is not inspect.Parameter.empty and name not in _KEPT_AT_DEFAULT:
            defaults[name] = _freeze(parameter.default)
    return defaults


def _is_default(value: Any, default: Any) -> bool:
    # a boolean is never the default of a number (``True == 1``), nor the other way round
    if isinstance(value, bool) != isinstance(default, bool):
        return False
    try:
        return bool(value == default)
    except Exception:  # an exotic default whose comparison raises: keep the option
        return False


def without_defaults(
    method: str, options: tuple[tuple[str, Any], ...]
) -> tuple[tuple[str, Any], ...]:
    """``options`` (canonical, as :class:`ExperimentSpec` keeps them) less those equal to the
    registered method's constructor default: ``adaptable[preset=default]`` is ``adaptable``,
    one experiment under one key (see :func:`method_defaults`)."""
    return tuple(drop_defaults(method, dict(options)).items())


def drop_defaults(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` in their order, less those equal to the registered method's constructor
    default (:func:`method_defaults`).

    >>> drop_defaults("adaptable", {"preset": "default", "calibrator": "platt"})
    {'calibrator': 'platt'}
    """
    if not options:
        return dict(options)
    defaults = method_defaults(method)
    return {
        name: value
        for name, value in options.items()
        if not (name in defaults and _is_default(_freeze(value), defaults[name]))
    }


def _freeze(value: Any) -> Any:
    # Lists become tuples so that the spec stays hashable.
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment: a method adapting one source model to one test stream.

    Args:
        dataset: task name for ``adaptable.datasets.load`` (``heloc``, ``hospital_readmission``...).
        scenario: shift name for ``adaptable.shifts.apply`` (``natural``, ``gaussian``...).
        model: source model name for ``adaptable.models.train`` (``mlp``, ``catboost``...).
        method: method name for ``adaptable.methods.create`` (``source``, ``adaptable``, ``tent``...).
        seed: seeds the source model, the stream order and the method.
        options: keyword options passed to the method (e.g. ``{"calibrator": "platt"}``); they
            are part of the key, so an ablation or a hyperparameter value is its own experiment.
            An option equal to the registered method's constructor default is dropped (except
            ``random_state``: see :func:`without_defaults`), so that spelling a default out
            names the same experiment, under the same key, as leaving it out.
        batch_size: rows per test batch.
        feedback_share: share of each batch's rows whose labels the method receives later
            (``partial_fit``), in [0, 1]; 0: no labels (the protocol of every other table).
        feedback_delay: batches between a batch and its labels (0: right after the batch).
            Both are part of the key only when ``feedback_share`` is not 0, so experiments
            without labels keep their keys.
        recipe: the deep source model's training recipe (``adaptable.models.train(recipe=...)``:
            ``"default"`` or ``"authors"``); part of the key and of :attr:`source_key` only when
            it is not ``"default"``. Supervised models ignore it.
        shift_options: keyword options of the shift (``adaptable.shifts.apply(scenario, ...,
            **shift_options)``, e.g. ``{"convention": "authors_code"}`` for class imbalance);
            part of the key only when given.

    Raises:
        ValueError: an empty name, a negative seed, a batch size below 1, an empty recipe.
        TypeError: options that are not a mapping of names to JSON values.
    """

    dataset: str
    scenario: str
    model: str
    method: str
    seed: int
    options: tuple[tuple[str, Any], ...] | Mapping[str, Any] = field(default=())
    batch_size: int = BATCH_SIZE
    feedback_share: float = 0.0
    feedback_delay: int = 0
    recipe: str = DEFAULT_RECIPE
    shift_options: tuple[tuple[str, Any], ...] | Mapping[str, Any] = field(default=())

    def __post_init__(self) -> None:
        for name in ("dataset", "scenario", "model", "method"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or "|" in value:
                raise ValueError(f"{name} must be a non-empty string without '|'; got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int; got {self.seed!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int; got {self.batch_size!r}")
        if not isinstance(self.recipe, str) or not self.recipe or "|" in self.recipe:
            raise ValueError(f"recipe must be a non-empty string without '|'; got {self.recipe!r}")
        for name in ("options", "shift_options"):
            value = getattr(self, name)
            if not (isinstance(value, Mapping) or value is None):
                value = dict(value)
            object.__setattr__(self, name, _canonical_options(value))
        object.__setattr__(self, "options", without_defaults(self.method, self.options))
        self._check_feedback()

    def _check_feedback(self) -> None:
        share, delay = self.feedback_share, self.feedback_delay
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ValueError(f"feedback_share must be a number in [0, 1]; got {share!r}")
        if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
            raise ValueError(f"feedback_delay must be a non-negative int; got {delay!r}")
        object.__setattr__(self, "feedback_share", float(share))
        if share == 0:
            object.__setattr__(self, "feedback_delay", 0)  # no labels: the delay means nothing

    @property
    def feedback(self) -> dict[str, Any] | None:
        """``{"share": ..., "delay": ...}``, or ``None`` without labels."""
        if self.feedback_share == 0:
            return None
        return {"share": self.feedback_share, "delay": self.feedback_delay}

    @property
    def option_dict(self) -> dict[str, Any]:
        """The method options as a plain dict (tuples turned back into lists)."""
        return _plain(self.options)

    @property
    def shift_option_dict(self) -> dict[str, Any]:
        """The shift options as a plain dict (tuples turned back into lists)."""
        return _plain(self.shift_options)

    @property
    def key(self) -> str:
        """A stable string identifying the experiment in the results store."""
        return self.key_with(self.option_dict)

    def key_with(self, options: Mapping[str, Any]) -> str:
        """The key this experiment has with the method options ``options`` in place of its
        own: with the options a stored record spells out (defaults included), the key a store
        written before defaults were dropped holds for it."""
        options = _plain(_canonical_options(options))
        parts = [self.dataset, self.scenario, self.model, self.method, f"seed={self.seed}"]
        if self.batch_size != BATCH_SIZE:
            parts.append(f"batch={self.batch_size}")
        if self.recipe != DEFAULT_RECIPE:
            parts.append(f"recipe={self.recipe}")
        if self.shift_options:
            parts.append("shift=" + _json(self.shift_option_dict))
        if options:
            parts.append(_json(options))
        if self.feedback is not None:
            parts.append(f"feedback={self.feedback_share:g}@{self.feedback_delay}")
        return "|".join(parts)

    @property
    def source_key(self) -> tuple[str, str, int] | tuple[str, str, int, str]:
        """(dataset, model, seed), and the recipe where it is not the default: experiments
        sharing it share one trained source model."""
        if self.recipe == DEFAULT_RECIPE:
            return (self.dataset, self.model, self.seed)
        return (self.dataset, self.model, self.seed, self.recipe)

    @property
    def label(self) -> str:
        """A short display name for the method and its options, e.g. ``adaptable[calibrator=none]``."""
        if not self.options:
            return self.method
        # booleans as the CLI spells them, so that a label parses back to the same options
        inner = ",".join(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}"
            for k, v in self.option_dict.items()
        )
        return f"{self.method}[{inner}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the inverse of :meth:`from_dict`); ``recipe``, ``shift_options``
        and ``feedback`` only where they differ from the defaults, so that the records of
        experiments without them keep their exact form."""
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "scenario": self.scenario,
            "model": self.model,
            "method": self.method,
            "seed": self.seed,
            "options": self.option_dict,
            "batch_size": self.batch_size,
        }
        if self.recipe != DEFAULT_RECIPE:
            out["recipe"] = self.recipe
        if self.shift_options:
            out["shift_options"] = self.shift_option_dict
        if self.feedback is not None:
            out["feedback"] = self.feedback
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentSpec:
        """Rebuild a spec from :meth:`to_dict` output (or a results-store record's ``spec``)."""
        return cls(
            dataset=data["dataset"],
            scenario=data["scenario"],
            model=data["model"],
            method=data["method"],
            seed=int(data["seed"]),
            options=dict(data.get("options") or {}),
            batch_size=int(data.get("batch_size", BATCH_SIZE)),
            feedback_share=float((data.get("feedback") or {}).get("share", 0.0)),
            feedback_delay=int((data.get("feedback") or {}).get("delay", 0)),
            recipe=data.get("recipe", DEFAULT_RECIPE),
            shift_options=dict(data.get("shift_options") or {}),
        )


def _plain(options: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in options}


def _json(options: Mapping[str, Any]) -> str:
    return json.dumps(options, sort_keys=True, separators=(",", ":"))


_PYTHON_CONSTANTS = {"None": None, "True": True, "False": False}
_METHOD_PATTERN = re.compile(r"^(?P<name>[^\[\]]+)(\[(?P<options>.*)\])?$")


def parse_method(text: str) -> tuple[str, dict[str, Any]]:
    """A method as the CLI spells it, ``NAME`` or ``NAME[key=value,...]``, as ``(name,
    options)``; values are read as JSON where they parse (numbers, booleans, null), as Python's
    ``None`` / ``True`` / ``False``, else as strings.

    >>> parse_method("adaptable[calibrator=none,alpha=0.2]")
    ('adaptable', {'calibrator': 'none', 'alpha': 0.2})
    >>> parse_method("adaptable[report_batches=None,verbose=true]")
    ('adaptable', {'report_batches': None, 'verbose': True})

    Raises:
        ValueError: a text that is not ``NAME`` or ``NAME[key=value,...]``.
    """
    match = _METHOD_PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"expected a method as NAME or NAME[key=value,...]; got {text!r}")
    options: dict[str, Any] = {}
    if match.group("options"):
        for part in match.group("options").split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ValueError(
                    f"method options must be key=value pairs; got {part!r} in {text!r}"
                )
            if value.strip() in _PYTHON_CONSTANTS:  # None, True, False as Python spells them
                options[key.strip()] = _PYTHON_CONSTANTS[value.strip()]
                continue
            try:
                options[key.strip()] = json.loads(value)
            except json.JSONDecodeError:
                options[key.strip()] = value.strip()
    return match.group("name").strip(), options


def grid(
    datasets: list[str],
    scenarios: list[str],
    models: list[str],
    methods: list[str | tuple[str, Mapping[str, Any]]],
    seeds: list[int],
    batch_size: int = BATCH_SIZE,
) -> list[ExperimentSpec]:
    """Every combination, ordered so that experiments sharing a source model are adjacent.

    ``methods`` items are names, names with options in the CLI's brackets
    (``"adaptable[preset=paper]"``, read by :func:`parse_method`), or ``(name, options)`` pairs.

    >>> grid(["heloc"], ["natural"], ["mlp"], ["adaptable[preset=paper]"], [0])[0].key
    'heloc|natural|mlp|adaptable|seed=0|{"preset":"paper"}'

    Raises:
        ValueError: a method text that is not ``NAME`` or ``NAME[key=value,...]``, and as
            :class:`ExperimentSpec` (all raised before any spec is returned).
    """
    parsed = [parse_method(m) if isinstance(m, str) else m for m in methods]
    out: list[ExperimentSpec] = []
    for dataset in datasets:
        for model in models:
            for seed in seeds:
                for scenario in scenarios:
                    for name, options in parsed:
                        out.append(
                            ExperimentSpec(
                                dataset, scenario, model, name, seed, options, batch_size
                            )
                        )
    return out
