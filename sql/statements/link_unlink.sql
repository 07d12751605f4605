--- params: none
--- columns: none
-- sendjobs_unlink_transactions (src/verbs/link.rs): remove the link.
DELETE FROM @extschema@.sendjobs_transaction_link
