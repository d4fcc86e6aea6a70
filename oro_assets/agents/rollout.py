"""Many episodes at once: n samples per problem, model calls batched across episodes.

Every episode runs through the arena's own ``run_episode`` (same loop limits, same canonical
messages) in a worker thread. Policies that expose ``act_batch`` (the local model) get a
lockstep proxy: a thread's ``act`` waits until every running episode is waiting for the model,
then one padded ``generate`` serves them all. Policies without ``act_batch`` (scripted, HTTP)
simply run in the worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from oro_assets.agents.local_model import GenerationRequest


@dataclass
class Rollout:
    """One episode of one sample of one problem."""

    problem: dict
    sample: int          # 0..n-1 (the sample index inside this call)
    policy_name: str
    episode: Any         # oro_assets.arena.episode.Episode

    @property
    def problem_id(self) -> str:
        return str(self.problem["problem_id"])


class _Request:
    __slots__ = ("request", "result", "error", "done")

    def __init__(self, request: GenerationRequest) -> None:
        self.request = request
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class LockstepBatcher:
    """Collects ``act`` calls of concurrently running episodes into batched generation."""

    def __init__(self, backend: Any, max_batch: int) -> None:
        self.backend = backend
        self.max_batch = max(1, max_batch)
        self._cond = threading.Condition()
        self._active = 0
        self._pending: list[_Request] = []
        self.batch_sizes: list[int] = []

    def enter(self) -> None:
        with self._cond:
            self._active += 1

    def leave(self) -> None:
        with self._cond:
            self._active -= 1
            batch = self._take_if_ready()
        if batch:
            self._run(batch)

    def submit(self, request: GenerationRequest) -> Any:
        req = _Request(request)
        with self._cond:
            self._pending.append(req)
            batch = self._take_if_ready()
        if batch:
            self._run(batch)
        req.done.wait()
        if req.error is not None:
            raise req.error
        return req.result

    def _take_if_ready(self) -> list[_Request]:
        # Called with the lock held: run once every live episode waits (or the batch is full).
        if self._pending and (len(self._pending) >= self._active or len(self._pending) >= self.max_batch):
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch:]
            return batch
        return []

    def _run(self, batch: list[_Request]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            results = self.backend.act_batch([r.request for r in batch])
            for r, res in zip(batch, results, strict=True):
                r.result = res
        except BaseException as exc:  # every waiting episode sees the failure (its episode fails)
            for r in batch:
                r.error = exc
        finally:
            for r in batch:
                r.done.set()


class _BatchedProxy:
    """The Policy an episode sees when its model calls are batched."""

    def __init__(self, batcher: LockstepBatcher, name: str) -> None:
        self._batcher = batcher
        self.name = name

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        return self._batcher.submit(GenerationRequest(problem_view, list(messages), list(tools)))


PolicyOrFactory = Any  # a Policy, or Callable[[int], Policy] taking the sample index


def _resolve(policy_or_factory: PolicyOrFactory, sample: int) -> Any:
    if hasattr(policy_or_factory, "act"):
        return policy_or_factory
    if callable(policy_or_factory):
        return policy_or_factory(sample)
    raise TypeError("rollout_many needs a Policy (with .act) or a factory sample_index -> Policy")


def rollout_many(policy_or_factory: PolicyOrFactory, problems: Sequence[dict], env: Any, n: int = 1, *,
                 max_steps: int = 30, timeout_s: float = 300.0, batch_size: int = 16,
                 workers: int | None = None, env_factory: Callable[[], Any] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 clock_factory: Callable[[], Any] | None = None,
                 episode_kwargs: dict[str, Any] | None = None) -> list[Rollout]:
    """Run ``n`` episodes per problem; returns rollouts ordered by (problem order, sample).

    ``policy_or_factory``: one Policy shared by all episodes, or ``factory(sample_index)``. A
    policy with ``act_batch`` (``LocalModelPolicy``) is batched across up to ``batch_size``
    concurrent episodes. ``env`` is shared (the in-process env is read-only) unless
    ``env_factory`` gives one per episode. ``clock_factory`` gives each episode its own clock
    (default: wall clock); ``episode_kwargs`` go to ``run_episode`` (tools, executor,
    system_prompt). Episode failures are recorded in the episode (status ``failed``), never raised.
    """
    from oro_assets.arena.episode import run_episode

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    jobs = [(pi, s) for pi in range(len(problems)) for s in range(n)]
    if not jobs:
        return []
    # One batcher per distinct batch-capable policy object.
    batchers: dict[int, LockstepBatcher] = {}
    resolved: dict[tuple[int, int], Any] = {}
    for job in jobs:
        pol = _resolve(policy_or_factory, job[1])
        if hasattr(pol, "act_batch"):
            batchers.setdefault(id(pol), LockstepBatcher(pol, batch_size))
        resolved[job] = pol
    any_batched = bool(batchers)
    n_workers = workers or (batch_size if any_batched else 1)
    n_workers = max(1, min(n_workers, len(jobs)))

    results: dict[tuple[int, int], Rollout] = {}
    done_count = [0]
    lock = threading.Lock()

    def run_job(job: tuple[int, int]) -> None:
        pi, sample = job
        pol = resolved[job]
        batcher = batchers.get(id(pol))
        episode_policy = _BatchedProxy(batcher, pol.name) if batcher else pol
        if batcher:
            batcher.enter()
        try:
            kwargs = dict(episode_kwargs or {})
            if clock_factory is not None:
                kwargs["clock"] = clock_factory()
            episode = run_episode(episode_policy, problems[pi], env_factory() if env_factory else env,
                                  max_steps=max_steps, timeout_s=timeout_s, **kwargs)
        finally:
            if batcher:
                batcher.leave()
        with lock:
            results[job] = Rollout(problem=problems[pi], sample=sample, policy_name=pol.name, episode=episode)
            done_count[0] += 1
            if progress:
                progress(done_count[0], len(jobs))

    if n_workers == 1:
        for job in jobs:
            run_job(job)
    else:
        with ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="rollout") as pool:
            for fut in [pool.submit(run_job, job) for job in jobs]:
                fut.result()
    return [results[job] for job in jobs]
