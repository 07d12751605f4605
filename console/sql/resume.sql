SELECT sendjobs_resume($1::text)
