"""A paused response: the requests it waits on (tool approvals, `request_info`), how they show, the
replies it takes.
"""
