"""DynamoDB adapters: `DynamoStateStore` (state.py) and `DynamoCache` (cache.py), tables in tables.py."""
