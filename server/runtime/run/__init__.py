"""One run of one response: built by the launcher from its plan, driven, paired with its checkpoints,
ended once.
"""
