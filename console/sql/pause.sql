SELECT sendjobs_pause($1::text)
