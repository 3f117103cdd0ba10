"""The AWS adapter of the CloudProvider port: boto3 against EC2, SSM, EKS, SQS and STS.

This package is the only place in the project that imports boto3 or botocore (an
import-linter contract keeps it so). :mod:`.session` makes the clients, :mod:`.errors` turns
botocore's exceptions into the project's typed errors; the other modules each own one concern.
"""
