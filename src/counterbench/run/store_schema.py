"""The SQLite store's tables (``CREATE`` statements) and its file identity: application id and schema version."""

APPLICATION_ID = 0x43424E43  # "CBNC"
#: 2 added ``responses.answer_logprobs``; 3 added ``answer_complete``, ``answer_mass`` and ``answer_forced``
#: (the reading of a label or choice answer's log-probabilities, :mod:`counterbench.outcomes.logprobs`).
#: Older stores are migrated when opened: the columns are added, empty for the rows already there.
#: ``batch_jobs`` and ``batch_requests`` (``--batch``: the provider's job ids, their states and which prompts
#: each job holds, :mod:`counterbench.run.batch_jobs`) are created when a store is opened for writing, so
#: they need no version of their own; a store without them has no batch job. The same holds for the view
#: ``answers`` (every response beside its prompt's columns, for Datasette or any SQL client without a join):
#: a view holds no data, so a store opened for writing gains it with no version and no migration.
SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    command TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    version TEXT,
    config TEXT,
    status TEXT NOT NULL,
    pid INTEGER,
    host TEXT,
    sent INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS configs (
    config_fp TEXT PRIMARY KEY,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS prompts (
    prompt_id TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    study TEXT, use_case TEXT, language TEXT, axis TEXT, identifier TEXT, profile_id TEXT,
    question_variant, variant TEXT, answer_type TEXT, system TEXT, user TEXT,
    design TEXT,
    PRIMARY KEY (prompt_id, prompt_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS responses (
    id INTEGER PRIMARY KEY,
    prompt_id TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    config_fp TEXT NOT NULL,
    request_fp TEXT NOT NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    response TEXT, finish_reason TEXT,
    value REAL, unit TEXT, release_value REAL, release_unit TEXT,
    is_range INTEGER, out_of_range INTEGER, parse_reason TEXT, parse_profile TEXT,
    input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, latency_ms REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    cached INTEGER NOT NULL DEFAULT 0,
    model_reported TEXT, source TEXT,
    started_at REAL, finished_at REAL, run_id INTEGER,
    answer_logprobs TEXT,
    answer_complete INTEGER, answer_mass REAL, answer_forced INTEGER,
    UNIQUE (model, config_fp, prompt_id)
);
CREATE INDEX IF NOT EXISTS responses_request_fp ON responses (request_fp);
CREATE TABLE IF NOT EXISTS batch_jobs (
    batch_key TEXT PRIMARY KEY,
    job_id TEXT,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    config_fp TEXT NOT NULL,
    endpoint TEXT,
    state TEXT NOT NULL,
    provider_status TEXT,
    n_requests INTEGER NOT NULL,
    n_processed INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    submitted_at REAL,
    updated_at REAL,
    collected_at REAL,
    run_id INTEGER,
    error TEXT
);
CREATE TABLE IF NOT EXISTS batch_requests (
    batch_key TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    prompt_ids TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    PRIMARY KEY (batch_key, custom_id)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS answers AS
SELECT r.id, r.model, r.config_fp, p.study, p.use_case, p.language, p.axis, p.identifier, p.profile_id,
       p.question_variant, p.variant, p.answer_type, r.status, r.value, r.unit, r.parse_reason, r.response,
       r.error, r.finish_reason, r.simulated, r.input_tokens, r.output_tokens, r.cost_usd, r.latency_ms,
       r.attempts, r.started_at, r.finished_at, r.run_id, r.prompt_id, r.prompt_hash, p.design, p.system, p.user
FROM responses r LEFT JOIN prompts p ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash;
"""

#: :data:`SCHEMA` as single statements, run one by one inside the transaction that creates a store
#: (``executescript`` would commit each ``CREATE`` on its own, so another process could see tables
#: before the file carries :data:`APPLICATION_ID`)
SCHEMA_STATEMENTS: tuple[str, ...] = tuple(stmt.strip() for stmt in SCHEMA.split(";") if stmt.strip())
