"""The check ``adaptable.models`` runs before importing anything of its own.

The deep backbones, their training and the registry that trains and caches every source model
(the scikit-learn ones included) are torch: on a core install, importing ``adaptable.models``
raises the error that names the ``torch`` extra. tqdm (training's progress bars) comes with the
same extra; ``adaptable run`` and ``adaptable reproduce``, whose bars are tqdm too, import this
package before they start any work, so this one check covers them.
"""

from adaptable.optional import require

for _module in ("torch", "rtdl_revisiting_models", "tqdm"):
    require(
        _module,
        feature="adaptable.models (models.train, models.create; adaptable run and reproduce)",
        extra="torch",
    )
