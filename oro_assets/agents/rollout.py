"""Many episodes at once: n samples per problem, model calls batched across episodes.

Every episode runs through the arena's own ``run_episode`` (same loop limits, same canonical
messages) in a worker thread. A policy over a local torch model (``LocalModelPolicy``, possibly
wrapped, e.g. in training's ``ViewPolicy``) runs in the rollout engine (``agents/engine.py``: KV cache
kept across an episode's turns, continuous batching, per-episode sampling). Other policies with
``act_batch`` (generate-only test models; ``engine=False``, the benchmark's baseline) get a lockstep
proxy: a thread's ``act`` waits until every running episode is waiting for the model, then one
padded ``generate`` serves them all. Policies without ``act_batch`` (scripted, HTTP) simply run in
the worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from oro_assets.agents.local_model import ContextOverflowError, GenerationRequest, engine_route


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
    __slots__ = ("key", "request", "result", "error", "done")

    def __init__(self, key: tuple, request: GenerationRequest) -> None:
        self.key = key
        self.request = request
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class LockstepBatcher:
    """Collects ``act`` calls of concurrently running episodes into batched generation.

    ``participants`` threads are registered up front (so the first batch waits for all of
    them); a thread calls :meth:`leave` when it has no more episodes. A batch runs once every
    registered thread waits for the model, ordered by episode key so the random stream of a
    seeded sampler is assigned deterministically.
    """

    def __init__(self, backend: Any, participants: int) -> None:
        self.backend = backend
        self._cond = threading.Condition()
        self._active = participants
        self._pending: list[_Request] = []
        self.batch_sizes: list[int] = []

    def leave(self) -> None:
        with self._cond:
            self._active -= 1
            batch = self._take_if_ready()
        if batch:
            self._run(batch)

    def submit(self, key: tuple, request: GenerationRequest) -> Any:
        req = _Request(key, request)
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
        # Called with the lock held.
        if self._pending and len(self._pending) >= self._active:
            batch, self._pending = sorted(self._pending, key=lambda r: r.key), []
            return batch
        return []

    def _run(self, batch: list[_Request]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            results = self.backend.act_batch([r.request for r in batch])
            for r, res in zip(batch, results, strict=True):
                if isinstance(res, BaseException):  # a per-request failure (e.g. context overflow)
                    r.error = res
                else:
                    r.result = res
        except BaseException as exc:  # every waiting episode sees the failure (its episode fails)
            for r in batch:
                r.error = exc
        finally:
            for r in batch:
                r.done.set()


class _BatchedProxy:
    """The Policy an episode sees when its model calls are batched."""

    def __init__(self, batcher: LockstepBatcher, name: str, key: tuple) -> None:
        self._batcher = batcher
        self._key = key
        self.name = name

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        return self._batcher.submit(self._key, GenerationRequest(problem_view, list(messages), list(tools)))


PolicyOrFactory = Any  # a Policy, or Callable[[int], Policy] taking the sample index


def _resolve(policy_or_factory: PolicyOrFactory, sample: int) -> Any:
    if hasattr(policy_or_factory, "act"):
        return policy_or_factory
    if callable(policy_or_factory):
        return policy_or_factory(sample)
    raise TypeError("rollout_many needs a Policy (with .act) or a factory sample_index -> Policy")


def engine_backend(policy: Any) -> Any:
    """The ``LocalModelPolicy`` under ``policy`` (through ``.inner`` wrappers), or None."""
    seen = 0
    while policy is not None and seen < 8:
        if hasattr(policy, "make_engine"):
            return policy
        policy, seen = getattr(policy, "inner", None), seen + 1
    return None


def _mark_overflow(episode: Any) -> None:
    err = getattr(episode, "error", None)
    if isinstance(err, dict) and err.get("type") == ContextOverflowError.__name__:
        err["reason"] = ContextOverflowError.reason


class _EpisodeThread:
    """One episode in its own thread, handing its model calls to the engine thread one at a time."""

    def __init__(self, target: Callable[[], None], backend: Any) -> None:
        self.ready = threading.Event()      # set by the episode: a request is posted, or it ended
        self.answered = threading.Event()   # set by the engine: the reply is there
        self.request: list[int] | None = None
        self.reply: Any = None
        self.ended = False
        self.job: tuple[int, int] | None = None
        self.error: BaseException | None = None
        self._target, self._backend = target, backend
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        engine_route(self._backend, self._generate)
        try:
            self._target()
        except BaseException as exc:  # a bug, not an episode failure: rollout_many reports it
            self.error = exc
        finally:
            engine_route(self._backend, None)
            self.ended = True
            self.ready.set()

    def _generate(self, ids: list[int]) -> tuple[str, int, int, str]:
        self.request = ids
        self.ready.set()
        self.answered.wait()
        self.answered.clear()
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply

    def start(self) -> None:
        self.thread.start()

    def answer(self, reply: Any) -> None:
        self.ready.clear()
        self.reply = reply
        self.answered.set()

    def wait(self) -> list[int] | None:
        """The next prompt, or None when the episode ended."""
        self.ready.wait()
        if self.ended:
            self.thread.join()
            return None
        ids, self.request = self.request, None
        return ids


def _run_in_engine(backend: Any, engine: Any, jobs: Sequence[tuple[int, int]], problems: Sequence[dict],
                   run_job: Callable[[tuple[int, int]], None],
                   traces: dict[tuple[int, int], tuple[list[int], list[int]]] | None = None) -> None:
    queue = list(reversed(jobs))
    live: list[_EpisodeThread] = []

    def next_seq() -> Any:
        while queue:
            job = queue.pop()
            ep = _EpisodeThread(lambda job=job: run_job(job), backend)
            live.append(ep)
            ep.start()
            ids = ep.wait()
            if ids is None:  # ended before its first model call (e.g. its prompt overflowed the context)
                live.remove(ep)
                continue
            ep.job = job
            seq = engine.new_seq(f"{problems[job[0]]['problem_id']}/{job[1]}", owner=ep)
            engine.set_prompt(seq, ids)
            return seq
        return None

    def answer(seq: Any, tokens: list[int], finish: str) -> None:
        seq.owner.answer((backend.decode(tokens), seq.prompt_tokens, len(tokens), finish))

    def resume(seq: Any) -> bool:
        ids = seq.owner.wait()
        if ids is None:
            live.remove(seq.owner)
            if traces is not None:
                traces[seq.owner.job] = seq.trace()
            return False
        engine.set_prompt(seq, ids)
        return True

    try:
        engine.run(next_seq, answer, resume)
    except BaseException as exc:  # the model failed: every waiting episode fails with it, then it is raised
        for ep in list(live):
            if not ep.ended:
                ep.answer(RuntimeError(f"rollout engine failed: {type(exc).__name__}: {exc}"))
                ep.thread.join()
        raise


def rollout_many(policy_or_factory: PolicyOrFactory, problems: Sequence[dict], env: Any, n: int = 1, *,
                 max_steps: int = 30, timeout_s: float = 300.0, batch_size: int = 16,
                 workers: int = 1, env_factory: Callable[[], Any] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 clock_factory: Callable[[], Any] | None = None,
                 episode_kwargs: dict[str, Any] | None = None, engine: Any = True,
                 stats: dict[str, Any] | None = None,
                 traces: dict[tuple[int, int], tuple[list[int], list[int]]] | None = None) -> list[Rollout]:
    """Run ``n`` episodes per problem; returns rollouts ordered by (problem order, sample).

    ``policy_or_factory``: one Policy shared by all episodes, or ``factory(sample_index)``. A
    policy over a local torch model runs in the rollout engine (``engine``: True = default
    :class:`~oro_assets.agents.engine.EngineConfig`, a config, or False = padded ``generate``
    calls of up to ``batch_size`` lockstep episodes, like other ``act_batch`` policies); other
    policies run on ``workers`` threads (1 = sequential). ``env`` is shared (the in-process env
    is read-only) unless ``env_factory`` gives one per episode. ``clock_factory`` gives each
    episode its own clock (default: wall clock); ``episode_kwargs`` go to ``run_episode`` (tools,
    executor, system_prompt). Episode failures are recorded in the episode (status ``failed``;
    a prompt over the context has error reason ``context_overflow``), never raised. ``stats``,
    when given, receives the engine's counters. ``traces``, when given, receives per job ``(problem index, sample)``
    run in the engine the episode's token ids as the model last saw them and a mask of the tokens it sampled
    (:meth:`~oro_assets.agents.engine._Seq.trace`; Dr. GRPO's episode-level groups).
    """
    from oro_assets.arena.episode import run_episode

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if batch_size < 1 or workers < 1:
        raise ValueError("batch_size and workers must be >= 1")
    jobs = [(pi, s) for pi in range(len(problems)) for s in range(n)]
    # Group jobs by policy object: each batch-capable policy gets its own lockstep batcher.
    groups: dict[int, list[tuple[int, int]]] = {}
    policies: dict[int, Any] = {}
    per_sample = {s: _resolve(policy_or_factory, s) for s in range(n)}  # a factory is called once per sample
    for job in jobs:
        pol = per_sample[job[1]]
        policies.setdefault(id(pol), pol)
        groups.setdefault(id(pol), []).append(job)

    results: dict[tuple[int, int], Rollout] = {}
    lock = threading.Lock()

    def run_job(job: tuple[int, int], pol: Any, episode_policy: Any) -> None:
        pi, sample = job
        kwargs = dict(episode_kwargs or {})
        if clock_factory is not None:
            kwargs["clock"] = clock_factory()
        episode = run_episode(episode_policy, problems[pi], env_factory() if env_factory else env,
                              max_steps=max_steps, timeout_s=timeout_s, **kwargs)
        _mark_overflow(episode)
        with lock:
            results[job] = Rollout(problem=problems[pi], sample=sample, policy_name=pol.name, episode=episode)
            if progress:
                progress(len(results), len(jobs))

    for key, group_jobs in groups.items():
        pol = policies[key]
        backend = engine_backend(pol) if engine is not False else None
        run_engine = backend.make_engine(None if engine is True else engine) if backend is not None else None
        if run_engine is not None:
            _run_in_engine(backend, run_engine, group_jobs, problems,
                           lambda job, pol=pol: run_job(job, pol, pol), traces)
            if stats is not None:
                for k, v in run_engine.stats.to_dict().items():
                    stats[k] = stats.get(k, 0) + v if k != "mean_decode_rows" else v
            continue
        queue = list(reversed(group_jobs))
        batched = hasattr(pol, "act_batch")
        n_threads = min(batch_size if batched else workers, len(group_jobs))
        batcher = LockstepBatcher(pol, n_threads) if batched else None

        def worker(pol: Any = pol, queue: list = queue, batcher: LockstepBatcher | None = batcher) -> None:
            try:
                while True:
                    with lock:
                        if not queue:
                            return
                        job = queue.pop()
                    proxy = _BatchedProxy(batcher, pol.name, job) if batcher else pol
                    run_job(job, pol, proxy)
            finally:
                if batcher:
                    batcher.leave()

        if n_threads == 1 and batcher is None:
            worker()
            continue
        threads = [threading.Thread(target=worker, name=f"rollout-{i}", daemon=True) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    missing = [job for job in jobs if job not in results]
    if missing:
        raise RuntimeError(f"{len(missing)} rollouts did not complete (a worker crashed); first: {missing[0]}")
    return [results[job] for job in jobs]
