"""The Dashboard's background jobs: Find fastest (search.py), Profile (profile.py) and Export (export.py), each a
small ``Job`` that host.py's ``JobHost`` runs one at a time, announcing every change on an ``EventBus``."""

from .host import Announcement, Event, EventBus, Job, JobHost

__all__ = ["Announcement", "Event", "EventBus", "Job", "JobHost"]
