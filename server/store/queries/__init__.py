"""The store's direct queries: reads of responses, items, checkpoints and requests; leases,
conversations, versions, webhooks.
"""
