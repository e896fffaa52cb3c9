// A deploy-time image build that ends without an image fails the deploy at once: a rule on
// CodeBuild's state changes of the build project invokes a function that answers the build's
// custom resource FAILED, with the build's log link (infra/custom-resources/image-build-failed.ts).
// Without it, a build that dies before its buildspec answers leaves CloudFormation waiting until
// the custom resource's service timeout. EventBridge delivers CodeBuild's events on a best-effort
// basis, so that timeout stays as the backstop.
import { Duration } from 'aws-cdk-lib';
import type { IProject } from 'aws-cdk-lib/aws-codebuild';
import { Match, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BUILD_RUNNING_OR_SUCCEEDED } from '../custom-resources/image-build-failed.ts';
import { createAgentFunction } from './agent-function.ts';

export const IMAGE_BUILD_FAILED_HANDLER_ENTRY = 'infra/custom-resources/image-build-failed.ts';

export interface ImageBuildFailuresProps {
  /** The CodeBuild project whose builds answer a custom resource (deploy-time-build's). */
  readonly project: IProject;
  readonly logRetention: RetentionDays;
}

export class ImageBuildFailures extends Construct {
  readonly handler: NodejsFunction;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: ImageBuildFailuresProps) {
    super(scope, id);
    // No AWS permission: it only PUTs to the presigned response URL the build carries.
    this.handler = createAgentFunction(this, 'Handler', {
      entry: IMAGE_BUILD_FAILED_HANDLER_ENTRY,
      description: 'Fails the sandbox image build custom resource, with the log link, when its CodeBuild build fails',
      timeout: Duration.seconds(30),
      logRetention: props.logRetention,
    });
    this.rule = new Rule(this, 'Rule', {
      description: 'A sandbox image build ended without an image: fail its custom resource now',
      eventPattern: {
        source: ['aws.codebuild'],
        detailType: ['CodeBuild Build State Change'],
        detail: {
          'project-name': [props.project.projectName],
          'build-status': Match.anythingBut(...BUILD_RUNNING_OR_SUCCEEDED),
        },
      },
      targets: [new LambdaFunction(this.handler)],
    });
  }
}
