"""Fleet politeness in one call on PostgreSQL: a function that reserves a site's next start and
an in-flight slot (see searchcrawl/store/sites.py).

Four statements from the client held the site's row lock for four round trips plus the Python
between them, and every node of the fleet queued behind that lock; inside one function call
the lock is held for microseconds, and the reservation costs one round trip instead of six.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-21
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ACQUIRE = """
CREATE OR REPLACE FUNCTION searchcrawl_site_acquire(
    p_site varchar, p_delay double precision, p_concurrency integer, p_hold double precision, p_owner varchar,
    OUT lease_id integer, OUT wait double precision)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_next timestamptz;
    v_clock timestamptz;
    v_start timestamptz;
BEGIN
    SELECT next_at INTO v_next FROM site_slots WHERE site = p_site FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO site_slots (site) VALUES (p_site) ON CONFLICT (site) DO NOTHING;
        SELECT next_at INTO v_next FROM site_slots WHERE site = p_site FOR UPDATE;
    END IF;
    -- read after the lock is ours; each statement below sees what the previous holder committed
    v_clock := clock_timestamp();
    IF (SELECT count(*) FROM site_leases WHERE site = p_site AND expires >= v_clock) >= p_concurrency THEN
        DELETE FROM site_leases WHERE site = p_site AND expires < v_clock;
        RETURN;  -- no lease: the site has its limit of requests in flight
    END IF;
    v_start := greatest(coalesce(v_next, v_clock), v_clock);
    UPDATE site_slots SET next_at = v_start + make_interval(secs => p_delay) WHERE site = p_site;
    INSERT INTO site_leases (site, owner, expires) VALUES (p_site, p_owner, v_start + make_interval(secs => p_hold))
        RETURNING id INTO lease_id;
    wait := extract(epoch FROM v_start - v_clock);
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.get_bind().exec_driver_sql(ACQUIRE)  # as written: no bind-parameter parsing of ":="


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS searchcrawl_site_acquire(varchar, double precision, integer, double precision, varchar)")
