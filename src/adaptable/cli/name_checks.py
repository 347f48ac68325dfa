"""The names that options give (datasets, models, scenarios, methods), checked before any work.

A name in another case becomes the registered one, an unknown name gets the closest valid
ones, and each method is built once with its options, so that a bad value, or a method that
cannot run on a model or take what the command gives it, is a usage error rather than the same
failure once per experiment after the data loaded and models trained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adaptable.experiments.components import Components, incompatible_pairs, unknown_names


def method_label(name: str, options: dict[str, Any]) -> str:
    """A method as the command line spells it: ``adaptable[calibrator=none,alpha=0.2]``, or the
    bare name without options (one label per distinct experiment)."""
    inner = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{name}[{inner}]" if options else name


def canonical_datasets(datasets: Sequence[str]) -> list[str]:
    """Task names with TableShift's identifiers and short names resolved (``readmission``)."""
    from adaptable.datasets.registry import canonical

    return list(dict.fromkeys(canonical(d) for d in datasets))


def unknown_name_problems(
    components: Components,
    datasets: Sequence[str],
    models: Sequence[str],
    scenarios: Sequence[str],
    methods: Sequence[tuple[str, dict[str, Any]]],
) -> list[str]:
    """One problem per name the providers do not know, with the closest valid ones (see
    :func:`~adaptable.experiments.components.unknown_names`); methods by name, options aside."""
    return unknown_names(
        components,
        dataset=datasets,
        model=models,
        scenario=scenarios,
        method=[name for name, _ in methods],
    )


def build_methods(
    components: Components, methods: Sequence[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, Any], list[str]]:
    """Build each known method once with its options: bad values fail here, with the method's
    own message, rather than once per experiment after the data loaded and models trained.

    Returns:
        (label -> built method, one problem per method that could not be built).
    """
    known = set(components.known_names("method"))
    built: dict[str, Any] = {}
    problems = []
    for name, options in methods:
        if name not in known:
            continue
        try:
            built[method_label(name, options)] = components.create_method(name, **options)
        except (ValueError, TypeError, KeyError) as err:
            detail = err.args[0] if isinstance(err, KeyError) and err.args else err
            problems.append(f"method {method_label(name, options)}: {detail}")
    return built, problems


def incompatible_methods(
    components: Components, models: Sequence[str], built: dict[str, Any]
) -> list[str]:
    """Methods that cannot run on some of the (known) models: a usage error naming the pair,
    instead of the same failure once per experiment after the data loaded."""
    known = set(components.known_names("model"))
    return incompatible_pairs(components, [m for m in models if m in known], built)


def refused_methods(
    option: str,
    built: dict[str, Any],
    reason: Callable[[Any], str | None],
    lacks: tuple[str, str],
    hint: str,
) -> list[str]:
    """One problem naming every built method that ``reason(method)`` refuses (``None``: it
    does not; an empty reason is not shown), e.g. ``--feedback: source (no partial_fit) and
    adaptable[preset=paper] take no late labels; HINT``: one line however many methods
    (``lacks``: the singular and plural verb).
    """
    refused = {label: reason(method) for label, method in built.items()}
    named = [f"{label} ({why})" if why else label for label, why in refused.items()
             if why is not None]  # fmt: skip
    if not named:
        return []
    if len(named) == 1:
        return [f"{option}: {named[0]} {lacks[0]}; {hint}"]
    return [f"{option}: {', '.join(named[:-1])} and {named[-1]} {lacks[1]}; {hint}"]


def _non_default_adaptable(method: Any) -> str | None:
    """``""`` for AdapTable with a preset other than the default (its label names the preset):
    it has ``partial_fit`` and ``report``, but they raise (the paper's Algorithm 1 keeps no
    report and has no use for labels); else ``None``."""
    preset = getattr(method, "preset", "default")
    if preset == "default":  # also every method without presets: AdapTable is not imported
        return None
    from adaptable.core import AdapTable

    return "" if isinstance(method, AdapTable) else None


def label_refusal(method: Any) -> str | None:
    """Why a built method cannot take the late labels of ``--feedback`` (``None``: it can);
    the runner would fail each of its experiments for it."""
    if not callable(getattr(method, "partial_fit", None)):
        return "no partial_fit"
    return _non_default_adaptable(method)


def report_refusal(method: Any) -> str | None:
    """Why a built method has no drift report for ``--drift-figure`` (``None``: it has; the
    message says the rest)."""
    if not callable(getattr(method, "report", None)):
        return ""
    return _non_default_adaptable(method)
