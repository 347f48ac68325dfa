"""Where experiments run: in this process / a local process pool (default), or on Ray.

Both expose ``workers`` and ``map_unordered(fn, items, context)``, which yields
``(item, fn(item, context))`` pairs as they finish (an exception object in place of the result
when the call itself could not run). The sweep, not the executor, writes the results store, so
both executors share one store format and one resume logic.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from adaptable.experiments.process import exit_with_parent, ignore_interrupts, limit_threads
from adaptable.optional import require

#: how long stopped workers get to exit before they are killed (seconds)
_STOP_GRACE = 5.0


def _init_worker(threads: int, parent: int | None = None) -> None:
    # Each worker gets its own small share of the cores instead of every worker using all.
    limit_threads(threads)
    if parent is not None:
        # Ctrl-C reaches every process of the terminal's group: the parent alone handles it
        # (it stops the workers and says what was saved), not each worker with a traceback.
        ignore_interrupts()
        # A parent killed outright (kill -9) runs no cleanup: the workers notice it themselves.
        exit_with_parent(parent)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (the sweep was interrupted or abandoned).

    ``ProcessPoolExecutor`` has no public way to stop running calls before Python 3.14
    (``terminate_workers``); its process table is read where it exists.
    """
    terminate = getattr(pool, "terminate_workers", None)
    if callable(terminate):
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(_STOP_GRACE)
        if process.is_alive():
            process.kill()
            process.join(_STOP_GRACE)


class LocalExecutor:
    """Run experiments here (``workers=1``) or in a pool of ``workers`` spawned processes.

    Args:
        workers: number of processes; 1 runs in the calling process (no start-up cost, and the
            in-process model memo is shared by all experiments).

    Deliberate differences from a plain ``ProcessPoolExecutor``: processes are *spawned*, not
    forked, because forking a process that already holds torch's thread pool can deadlock;
    workers ignore Ctrl-C (the caller gets ``KeyboardInterrupt`` and the pool's workers are
    stopped, not waited for); and each worker exits by itself when the calling process dies,
    even by ``kill -9``.
    """

    def __init__(self, workers: int = 1) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive int; got {workers!r}")
        self.workers = workers

    def __repr__(self) -> str:
        return f"LocalExecutor(workers={self.workers})"

    def map_unordered(
        self, fn: Callable[[Any, Any], Any], items: Sequence[Any], context: Any
    ) -> Iterator[tuple[Any, Any]]:
        """Yield ``(item, fn(item, context))`` as each call finishes."""
        if self.workers == 1 or len(items) <= 1:
            for item in items:
                try:
                    yield item, fn(item, context)
                except Exception as err:  # noqa: BLE001 - reported to the caller as a value
                    yield item, err
            return
        threads = max(1, int(getattr(context, "threads", 1)))
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(items)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(threads, os.getpid()),
        )
        finished_all = False
        try:
            # Keep at most two calls per worker queued, in request order, so that experiments
            # sharing a source model tend to land on the worker that already holds it.
            pending: dict[Future[Any], Any] = {}
            queue = list(items)
            queue.reverse()
            limit = 2 * self.workers
            while queue or pending:
                while queue and len(pending) < limit:
                    item = queue.pop()
                    pending[pool.submit(fn, item, context)] = item
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    item = pending.pop(future)
                    error = future.exception()
                    yield item, (error if error is not None else future.result())
            finished_all = True
        finally:
            # Interrupted (Ctrl-C) or abandoned by the caller: the running calls' results
            # would be thrown away, so the workers stop now instead of finishing them.
            manager = getattr(pool, "_executor_manager_thread", None)
            if not finished_all:
                _stop_workers(pool)
            # Waited for even when interrupted: the workers are gone, and the pool's manager
            # thread must close its pipes before the interpreter's exit handler writes to them
            # (otherwise a traceback from that handler follows the one-line message). Joined
            # by hand too: a pool that stops its own workers may already have let it go.
            pool.shutdown(wait=True, cancel_futures=True)
            if manager is not None:
                manager.join()

    def close(self) -> None:
        """Nothing to release (pools live only for one ``map_unordered`` call)."""


class ClusterUnreachable(ConnectionError):
    """No Ray cluster answers at the address given."""


#: seconds a Ray address's host and port get to accept a connection before Ray is asked
CONNECT_SECONDS = 5.0


def _check_reachable(address: str) -> None:
    """Refuse a ``host:port`` address (``ray://host:port`` too) whose port accepts no
    connection within :data:`CONNECT_SECONDS`: Ray itself retries such an address for
    minutes. ``"auto"`` and addresses without a port are left to Ray.

    Raises:
        ConnectionError: nothing accepts a connection there (an ``OSError`` subclass).
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as err:
        raise ConnectionError(f"{host}:{port} accepts no connection: {err}") from err


class RayExecutor:
    """Run experiments as Ray tasks (one CPU each) on a local or remote Ray cluster.

    Args:
        address: a cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts a
            local Ray instance for this process.

    Raises:
        ClusterUnreachable: no Ray cluster answers at ``address`` (after Ray's own retries).
        workers: CPUs of the local instance (``None``: all); ignored when joining a cluster.
        max_in_flight: tasks submitted ahead of the results (bounds the driver's memory).

    Install with ``pip install "adaptable-tta[ray]"``.
    """

    def __init__(
        self, address: str | None = None, workers: int | None = None, max_in_flight: int = 64
    ) -> None:
        ray = require("ray", feature="The Ray executor (--executor ray)", extra="ray")
        self._ray = ray
        self._started_here = False
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "ignore_reinit_error": True,
            }
            if address is not None:
                options["address"] = address
            elif workers is not None:
                options["num_cpus"] = workers
            try:
                if address is not None:
                    _check_reachable(address)
                ray.init(**options)
            except (ConnectionError, ValueError) as err:  # ValueError: a malformed address
                raise ClusterUnreachable(
                    f"cannot reach the Ray cluster at {address!r} ({err}); start one there "
                    "(ray start --head) or leave the address out to run Ray on this machine"
                ) from err
            self._started_here = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.max_in_flight = max_in_flight
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_call)

    def __repr__(self) -> str:
        return f"RayExecutor(workers={self.workers})"

    def map_unordered(
        self, fn: Callable[[Any, Any], Any], items: Sequence[Any], context: Any
    ) -> Iterator[tuple[Any, Any]]:
        """Yield ``(item, fn(item, context))`` as each Ray task finishes."""
        ray = self._ray
        context_ref = ray.put(context)
        queue = list(items)
        queue.reverse()
        pending: dict[Any, Any] = {}
        while queue or pending:
            while queue and len(pending) < self.max_in_flight:
                item = queue.pop()
                pending[self._remote.remote(fn, item, context_ref)] = item
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                item = pending.pop(ref)
                try:
                    yield item, ray.get(ref)
                except Exception as err:  # noqa: BLE001 - a lost worker is reported, not raised
                    yield item, err

    def close(self) -> None:
        """Shut down the Ray instance if this executor started it."""
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()
            self._started_here = False


def _ray_call(fn: Callable[[Any, Any], Any], item: Any, context: Any) -> Any:
    threads = max(1, int(getattr(context, "threads", 1)))
    _init_worker(threads)
    return fn(item, context)


def make_executor(
    kind: str = "local", workers: int | None = None, address: str | None = None
) -> LocalExecutor | RayExecutor:
    """``"local"`` -> :class:`LocalExecutor` (default one worker), ``"ray"`` -> :class:`RayExecutor`."""
    if kind == "local":
        return LocalExecutor(workers=workers or 1)
    if kind == "ray":
        return RayExecutor(address=address, workers=workers)
    raise ValueError(f"executor must be 'local' or 'ray'; got {kind!r}")
