"""The check ``adaptable.baselines`` runs before importing anything of its own.

The package imports every peer method, and those that update a network (TENT, SAR, EATA, ...)
are torch: on a core install, importing ``adaptable.baselines`` (so ``methods.create`` of any
peer) raises the error that names the ``torch`` extra. ``AdapTable`` itself needs no peer.
"""

from adaptable.optional import require

require(
    "torch",
    feature="adaptable.baselines (the peer methods: methods.create('tent'), 'em', ...)",
    extra="torch",
)
